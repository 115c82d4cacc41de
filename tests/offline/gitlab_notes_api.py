"""A stand-in for GitLab's merge request notes API, for tests/offline/ci_script.rs.

    python3 gitlab_notes_api.py DIR TOKEN PAGE_SIZE

Serves the notes of one merge request (project 42, !7) under /api/v4:

    GET  /api/v4/projects/42/merge_requests/7/notes?page=N   (X-Next-Page as GitLab sends it)
    POST /api/v4/projects/42/merge_requests/7/notes           (form field `body`)
    PUT  /api/v4/projects/42/merge_requests/7/notes/ID        (form field `body`)

Every request must carry `PRIVATE-TOKEN: TOKEN` (else 401, as GitLab answers). Pages
hold at most PAGE_SIZE notes whatever per_page asks, so a short page size makes the
client follow X-Next-Page. The answers escape `<`, `>` and `/` as GitLab's JSON may.
Prints its port on the first line of stdout; writes DIR/requests (one JSON object per
request: method, path, query, whether the token was right) and DIR/notes.json (the
notes after each change). DIR/notes.json, when there at start, is the notes to begin
with.
"""

import json
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

DIR, TOKEN, PAGE_SIZE = sys.argv[1], sys.argv[2], int(sys.argv[3])
NOTES_PATH = "/api/v4/projects/42/merge_requests/7/notes"
STATE = os.path.join(DIR, "notes.json")

notes = []
if os.path.exists(STATE):
    with open(STATE) as f:
        notes = json.load(f)


def save():
    with open(STATE, "w") as f:
        json.dump(notes, f)


def gitlab_json(value):
    text = json.dumps(value)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("/", "\\/")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, value, headers=()):
        data = gitlab_json(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, text in headers:
            self.send_header(name, text)
        self.end_headers()
        self.wfile.write(data)

    def handle_one(self, method):
        url = urllib.parse.urlsplit(self.path)
        authorized = self.headers.get("PRIVATE-TOKEN") == TOKEN
        length = int(self.headers.get("Content-Length") or 0)
        form = urllib.parse.parse_qs(self.rfile.read(length).decode(), keep_blank_values=True)
        with open(os.path.join(DIR, "requests"), "a") as f:
            record = {"method": method, "path": url.path, "query": url.query, "authorized": authorized}
            f.write(json.dumps(record) + "\n")
        if not authorized:
            return self.answer(401, {"message": "401 Unauthorized"})
        if method == "GET" and url.path == NOTES_PATH:
            page = int(urllib.parse.parse_qs(url.query).get("page", ["1"])[0])
            start = (page - 1) * PAGE_SIZE
            next_page = str(page + 1) if start + PAGE_SIZE < len(notes) else ""
            return self.answer(200, notes[start : start + PAGE_SIZE], [("X-Next-Page", next_page)])
        if method == "POST" and url.path == NOTES_PATH and "body" in form:
            note = {"id": max([n["id"] for n in notes], default=1000) + 1, "body": form["body"][0],
                    "author": {"id": 1, "username": "project_42_bot"}, "system": False}
            notes.append(note)
            save()
            return self.answer(201, note)
        if method == "PUT" and url.path.startswith(NOTES_PATH + "/") and "body" in form:
            wanted = url.path[len(NOTES_PATH) + 1 :]
            for note in notes:
                if str(note["id"]) == wanted:
                    note["body"] = form["body"][0]
                    save()
                    return self.answer(200, note)
        return self.answer(404, {"message": "404 Not found"})

    def do_GET(self):
        self.handle_one("GET")

    def do_POST(self):
        self.handle_one("POST")

    def do_PUT(self):
        self.handle_one("PUT")


server = HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
