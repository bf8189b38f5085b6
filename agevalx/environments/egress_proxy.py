"""The egress fence's proxy, run with the stock `python3` of a small container (stdlib only).

Usage: `python3 egress_proxy.py CONFIG_JSON` with `{"allow": [hostnames], "proxy_port": N,
"forwards": [[listen_port, host, port], ...]}`. It answers HTTP `CONNECT host:port` and
absolute-form HTTP requests (`GET http://host/...`) only for the listed hostnames (exact,
case-insensitive; an IP address only when it is listed itself) and relays each forward port to
its target (the model gateway on the host). It prints `ready` once listening.
"""

import asyncio
import contextlib
import json
import sys
from asyncio import StreamReader, StreamWriter
from typing import Any
from urllib.parse import urlsplit

HEAD_LIMIT = 64 * 1024


async def _pipe(reader: StreamReader, writer: StreamWriter) -> None:
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()


async def _splice(
    client_reader: StreamReader, client_writer: StreamWriter, host: str, port: int
) -> None:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(_pipe(client_reader, writer), _pipe(reader, client_writer))


def _answer(writer: StreamWriter, status: str) -> None:
    writer.write(f"HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
    writer.close()


async def _proxy(allow: set[str], reader: StreamReader, writer: StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    line, _, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3:
        _answer(writer, "400 Bad Request")
        return
    method, target, version = parts
    if method.upper() == "CONNECT":
        host, _, port = target.rpartition(":")
        host = host.strip("[]")
        first = b""
    else:
        url = urlsplit(target)
        if url.scheme != "http" or not url.hostname:
            _answer(writer, "400 Bad Request")
            return
        host, port = url.hostname, str(url.port or 80)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        first = f"{method} {path} {version}\r\n".encode("latin-1") + rest
    if host.lower() not in allow or not port.isdigit():
        _answer(writer, "403 Forbidden")
        return
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
    except OSError:
        _answer(writer, "502 Bad Gateway")
        return
    if first:
        upstream_writer.write(first)
    else:
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))


async def main(config: dict[str, Any]) -> None:
    allow = {name.lower() for name in config["allow"]}

    async def proxy(reader: StreamReader, writer: StreamWriter) -> None:
        await _proxy(allow, reader, writer)

    servers = [await asyncio.start_server(proxy, "0.0.0.0", config["proxy_port"], limit=HEAD_LIMIT)]
    for listen, host, port in config["forwards"]:

        async def forward(
            reader: StreamReader, writer: StreamWriter, host: str = host, port: int = port
        ) -> None:
            await _splice(reader, writer, host, port)

        servers.append(await asyncio.start_server(forward, "0.0.0.0", listen))
    print("ready", flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
