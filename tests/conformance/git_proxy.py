#!/usr/bin/env python3
"""One Git host behind an HTTPS proxy on loopback, for Argo CD's repo server (issue 21 item 4).

Consumes: a folder of bare Git repositories (--root), the host name the repositories are
published under (--host, such as git.example.com), a serving certificate and key for that name
(--cert, --key), a free port (--port), and `git http-backend`.
Produces: an HTTP proxy on 127.0.0.1:<port>. A client that is told to use it (HTTPS_PROXY) and
asks to CONNECT to <host>:443 gets a TLS connection terminated here with the given certificate,
behind which `git http-backend` serves the repositories with Git's smart HTTP protocol (v0, v1
and v2). So the repository URL of an Application, `https://<host>/<path>.git`, is cloned as
written, and the client verifies the certificate against a CA it was given for that host.
Invariants: listens on 127.0.0.1 only; answers no other CONNECT target (403) and no plain
request (405); read-only (no receive-pack); every request is served in a thread of its own.
"""

import argparse
import os
import ssl
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    return parser.parse_args()


ARGS = parse_args()
CONTEXT = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
CONTEXT.load_cert_chain(ARGS.cert, ARGS.key)


class Proxy(BaseHTTPRequestHandler):
    """The proxy side: only CONNECT to the one host."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        sys.stderr.write("proxy: %s\n" % (format % args))

    def do_CONNECT(self):
        if self.path != "%s:443" % ARGS.host:
            self.send_error(403, "only %s:443 is served here" % ARGS.host)
            return
        self.send_response(200, "Connection Established")
        self.end_headers()
        self.wfile.flush()
        try:
            tls = CONTEXT.wrap_socket(self.connection, server_side=True)
        except (ssl.SSLError, OSError) as error:
            sys.stderr.write("proxy: TLS handshake failed: %s\n" % error)
            self.close_connection = True
            return
        # Serve the requests inside the tunnel until the client closes it.
        GitServer(tls, self.client_address, self.server)
        self.close_connection = True

    def do_GET(self):
        self.send_error(405, "this proxy only tunnels to %s:443" % ARGS.host)

    do_POST = do_GET


class GitServer(BaseHTTPRequestHandler):
    """The Git host inside the tunnel: `git http-backend` as a CGI program."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        sys.stderr.write("git: %s\n" % (format % args))

    def do_GET(self):
        self.backend()

    def do_POST(self):
        self.backend()

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    # The trailer ends with an empty line.
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def backend(self):
        path, _, query = self.path.partition("?")
        if "git-receive-pack" in path or "git-receive-pack" in query:
            self.send_error(403, "read-only")
            return
        body = self.read_body()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": ARGS.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        result = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        if result.stderr:
            sys.stderr.write("git http-backend: %s\n" % result.stderr.decode(errors="replace"))
        head, _, payload = result.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = result.stdout.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name.strip(), value.strip()))
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Proxy)
    server.daemon_threads = True
    sys.stderr.write("proxy: serving %s on 127.0.0.1:%d\n" % (ARGS.host, ARGS.port))
    server.serve_forever()


if __name__ == "__main__":
    main()
