"""A misbehaving extension API server on 127.0.0.1, for the aggregation layer's bad-input cases.

    python3 bad_backend.py junk PORT             # a TCP listener that writes junk and closes
    python3 bad_backend.py html PORT CERT KEY    # HTTPS answering 200 text/html to every GET
"""
import socket
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def junk(port):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(16)
    while True:
        conn, _ = srv.accept()

        def answer(c):
            try:
                c.sendall(b"this is not TLS, nor HTTP\r\n\r\n")
            finally:
                c.close()

        threading.Thread(target=answer, args=(conn,), daemon=True).start()


class Html(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html><body>not a discovery document</body></html>\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def html(port, cert, key):
    srv = ThreadingHTTPServer(("127.0.0.1", port), Html)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "junk":
        junk(int(sys.argv[2]))
    else:
        html(int(sys.argv[2]), sys.argv[3], sys.argv[4])
