"""The one home of the generic test helpers (#22.10): waiting for a condition, running work on
threads and collecting what each worker did. Fixtures live in conftest.py; the scripted HTTP
peer in httpkit.py; the stdio lifecycle helpers in lifekit.py; the OAuth test world in
oauthkit.py."""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence


def wait_until(predicate: Callable[[], Any], seconds: float, interval: float = 0.02) -> bool:
    """Poll ``predicate`` until it is true or ``seconds`` pass; the last answer is returned, so
    ``assert wait_until(...)`` fails when the condition never held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def in_thread(function: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``function`` on a thread; the dict gets "value" or "error", and "at" (when it ended)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = function()
        except BaseException as exc:
            box["error"] = exc
        box["at"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def run_workers(
    target: Callable[..., Any], args: Sequence[tuple[Any, ...]], timeout: float = 60.0
) -> list[Any]:
    """Run ``target(*a)`` for each ``a`` in ``args`` on its own thread, all at once, and collect
    every outcome: the results in order, or an AssertionError naming each worker that raised
    or did not finish within ``timeout`` seconds. A test that starts workers must not pass
    when the workers die (#22.1)."""
    boxes = []
    for a in args:
        boxes.append(in_thread(lambda a=a: target(*a)))
    deadline = time.monotonic() + timeout
    for thread, _ in boxes:
        thread.join(max(0.0, deadline - time.monotonic()))
    problems = []
    for n, (thread, box) in enumerate(boxes):
        if thread.is_alive():
            problems.append(f"worker {n} did not finish within {timeout} s")
        elif "error" in box:
            problems.append(f"worker {n} raised {box['error']!r}")
    if problems:
        first = next((box["error"] for _, box in boxes if "error" in box), None)
        raise AssertionError(f"{len(problems)} of {len(boxes)} workers failed: " + "; ".join(problems[:5])) from first
    return [box.get("value") for _, box in boxes]


def process_exists(pid: int) -> bool:
    """True when a process ``pid`` exists (zombies included)."""
    if not isinstance(pid, int) or pid <= 0:
        raise ValueError(f"not a pid: {pid!r}")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def env_without_coverage() -> dict[str, str]:
    """This process's environment minus coverage's subprocess hooks: for a child whose imports
    or threads are what the test measures (coverage itself imports modules and starts threads)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS_")}


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A CA-flagged self-signed certificate for 127.0.0.1 and its key (cert.pem, key.pem in
    ``folder``), made with ``cryptography`` (a test dependency; no ``openssl`` binary needed)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcp-sync test CA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def ipv6_loopback_usable() -> bool:
    """Whether ::1 can really be bound here (``socket.has_ipv6`` is only a compile-time flag:
    a container without IPv6 has it True)."""
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def open_fds() -> dict[int, str]:
    """This process's open file descriptors and what each points to (Linux: /proc)."""
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass
    return fds


# -- LLM providers (#20.3, #20.4): their SDKs' message types, and a local stand-in for their APIs ----------


@functools.cache
def provider_message_validator(fmt: str) -> Any:
    """The provider SDK's own chat message type (``"openai"``: ``ChatCompletionMessageParam``,
    ``"anthropic"``: ``MessageParam``) as a pydantic validator of our dicts; built once per format."""
    import pydantic

    if fmt == "openai":
        from openai.types.chat import ChatCompletionMessageParam

        return pydantic.TypeAdapter(ChatCompletionMessageParam)
    from anthropic.types import MessageParam

    return pydantic.TypeAdapter(MessageParam)


class FakeProvider:
    """A local stand-in for the OpenAI, Anthropic and Gemini HTTP APIs: answers each POST with the next
    scripted reply and records ``(path, headers, body)`` (header names in lower case: the SDKs
    send them so). ``close()`` stops its thread."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        import json
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.replies = list(replies)
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers = {name.lower(): value for name, value in self.headers.items()}
                fake.requests.append((self.path, headers, body))
                data = json.dumps(fake.replies.pop(0)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def __enter__(self) -> FakeProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def chat_completion(message: dict[str, Any], finish: str | None, model: str = "gpt-4.1-mini") -> dict[str, Any]:
    """An OpenAI Chat Completions reply with one choice: ``message`` (besides its role) and ``finish``."""
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}]}


def anthropic_message(content: list[dict[str, Any]], stop: str | None, model: str = "claude-mini") -> dict[str, Any]:
    """An Anthropic Messages reply of ``content`` blocks, stopped for ``stop``."""
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


def gemini_response(parts: list[dict[str, Any]], finish: str | None,
                    model: str = "gemini-2.5-flash-001") -> dict[str, Any]:
    """A Gemini ``generateContent`` reply with one candidate of ``parts``, finished for ``finish``."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": model,
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}}
