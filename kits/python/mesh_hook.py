"""The hook side of mesh-provide's protocol (version 1) for Python, standard library only.

A hook fills in a :class:`Hook` (one method per verb, each given the
call's :class:`Deadline`) and hands it to :func:`run`, which speaks the
protocol in both modes:

- ``hook serve``: one JSON request a line on stdin, one JSON reply a line on
  stdout carrying the request's id; several requests in flight, each run on
  the thread that read it, each reply written whole as soon as it is done;
- ``hook VERB`` (exec mode): one JSON request on stdin, one JSON reply on
  stdout, exit 0 on success, 1 on failure, 2 on a bad command line or
  request.

A method returns on success and raises :class:`HookError` (with its class)
on failure; a verb left as the base class has it is answered
``{"unsupported": true}``. stdout is for replies only: log with :func:`log`
(stderr). The consumer's secret and the hook's own announced secrets
(:func:`announce_secrets`) are cut out of every error text before a reply
and out of every :func:`log` line. Every request names the provider
instance it is made for (``module@machine``): :func:`provider` says it
during any verb, and ``Consumer.provider`` carries it too. Mark what the
hook makes with it and list in ``held`` only that instance's (docs/hooks.md,
"Two instances, one backend"). docs/hooks.md is the protocol;
docs/kits/python.md shows a hook written with this module::

    import mesh_hook

    class MyHook(mesh_hook.Hook):
        name = "my-hook"

        def ensure(self, consumer, secret, deadline):
            ...                      # make it, or bring the secret back
            return None              # or "what was changed by hand, brought back"

        def check(self, consumer, secret, deadline):
            ...                      # log in as the consumer

    if __name__ == "__main__":
        mesh_hook.run(MyHook())
"""

from __future__ import annotations

import collections
import contextvars
import json
import os
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from typing import IO, Any, Dict, List, Mapping, Optional, Sequence

#: The protocol version this module speaks.
VERSION = 1

#: The four classes a failure may name.
CLASSES = ("credentials-rejected", "unreachable", "secret-unreadable", "refused")

#: The by-hand actions of ``mesh-provide conform``.
BY_HAND_ACTIONS = ("change", "make", "works", "reach", "remove")

#: Bound of a call when the request carries no ``deadline_ms`` and
#: ``MESH_HOOK_TIMEOUT_MS`` is not set: mesh-provide's default, 30 s.
DEFAULT_TIMEOUT_MS = 30_000

#: What replaces a secret in an error text or a log line.
REDACTED = "[redacted]"

#: Requests handled at once in serve mode (mesh-provide sends at most its
#: ``--concurrency``, 16 by default; conform up to its ``--consumers``).
SERVE_THREADS = 64


class HookError(Exception):
    """A failure with its class: ``raise HookError("refused", "the message")``.

    ``klass`` is one of :data:`CLASSES` (any other is read as ``refused``),
    or ``None`` to let mesh-provide read the message (``password
    authentication failed`` as credentials-rejected, ``connection refused``
    as unreachable).
    """

    def __init__(self, klass: Optional[str], message: Optional[str] = None, *, words: Optional[str] = None) -> None:
        if message is None and words is not None:
            warnings.warn("HookError(words=...) is deprecated: say message=", DeprecationWarning, stacklevel=2)
            message = words
        message = message or ""
        super().__init__(message)
        self.klass: Optional[str] = klass if klass is None or klass in CLASSES else "refused"
        self.message = message

    @property
    def words(self) -> str:
        """Deprecated: :attr:`message` (kept for one release)."""
        warnings.warn("HookError.words is deprecated: read .message", DeprecationWarning, stacklevel=2)
        return self.message


class Unsupported(Exception):
    """Raised by a verb the hook does not do: answered ``{"unsupported": true}``."""


@dataclass(frozen=True)
class Consumer:
    """The consumer an ``ensure`` or ``check`` carries."""

    name: str
    machine: str = ""
    provision: str = ""
    options: Any = None
    #: The provider instance (``module@machine``) the call is made for: the
    #: request's ``provider``, else ``MESH_PROVIDER``; the one that lists
    #: this consumer, whose mark what ``ensure`` makes carries.
    provider: str = ""

    @staticmethod
    def from_json(value: Any, provider: str = "") -> "Consumer":
        """The consumer of a request's ``consumer`` object (BadRequest when it is none)."""
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            raise BadRequest("the request's consumer is not an object with a name")
        return Consumer(
            name=value["name"],
            machine=str(value.get("machine") or ""),
            provision=str(value.get("provision") or ""),
            options=value.get("options"),
            provider=provider,
        )


@dataclass(frozen=True)
class HeldEntry:
    """One provision ``held`` lists."""

    consumer: str
    retired: bool = False


@dataclass(frozen=True)
class KnownFault:
    """A fault the hook can probe and repair (said in its hello)."""

    fault: str
    klass: str = "credentials-rejected"


@dataclass(frozen=True)
class ProviderFault:
    """A provider fault: the hook cannot work as its administrator now.

    Return one from :meth:`Hook.admin_fault`: hello's reply and every probe
    reply that found its known fault absent then say it (``"fault":
    {"class": ..., "error": ...}``); the loop publishes it at once and
    ``status`` names it on the provider's line. ``klass`` is one of
    :data:`CLASSES` (any other is sent as ``refused``); ``error`` says what
    is wrong and, best, how to fix it (the kit's known secrets are cut out).
    """

    klass: str = "refused"
    error: str = ""


@dataclass(frozen=True)
class ByHand:
    """A ``by-hand`` request of ``mesh-provide conform``: act on the backend as a person would.

    ``action`` is one of :data:`BY_HAND_ACTIONS`; ``secret`` comes with
    ``make``, ``works`` and ``reach``, ``target`` with ``reach``.
    """

    action: str
    consumer: str
    secret: Optional[str] = None
    target: Optional[str] = None
    #: The provider instance the call is made for (see :func:`provider`).
    provider: str = ""


class Deadline:
    """When mesh-provide stops waiting for this call's reply.

    Built from the request's ``deadline_ms`` as the request is read (else
    ``MESH_HOOK_TIMEOUT_MS``, else 30 s). Give :meth:`timeout` to anything
    that waits (a socket's ``settimeout``) so that a call gives up before
    mesh-provide does.
    """

    def __init__(self, ms: float, now: Optional[float] = None) -> None:
        self.at = (time.monotonic() if now is None else now) + ms / 1000.0

    def remaining(self) -> float:
        """Seconds left (0 once it has passed)."""
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        """Whether it has passed."""
        return self.remaining() <= 0.0

    def timeout(self, cap: Optional[float] = None) -> float:
        """Seconds a wait may take: what is left, at most ``cap``, at least 1 ms."""
        left = self.remaining()
        if cap is not None:
            left = min(left, cap)
        return max(left, 0.001)

    def check(self, what: str = "the call") -> None:
        """Raises HookError (unreachable) when it has passed."""
        if self.expired():
            raise HookError("unreachable", f"{what} ran out of time (mesh-provide's deadline passed)")


class BadRequest(Exception):
    """A request that is not one (its reply says refused; exec mode exits 2)."""


class Hook:
    """What a hook does; fill in the verbs its backend has.

    Every method is given the call's :class:`Deadline`. A method left as it
    is here raises :class:`Unsupported`: the verb is answered
    ``{"unsupported": true}`` (docs/hooks.md says what each means).
    """

    #: The hook's name, said in hello and at the start of its log lines.
    name: str = "hook"

    #: The faults it can probe and repair.
    repairs: Sequence[KnownFault] = ()

    def hello(self, deadline: Deadline) -> None:
        """Called on ``hello`` before it is answered: announce the hook's secrets here."""

    def admin_fault(self, deadline: Deadline) -> Optional[ProviderFault]:
        """Whether the hook can work as its administrator now: None when it can, else the fault.

        Asked after every ``hello`` (once :meth:`hello` returned) and every
        ``probe`` that found its known fault absent; its answer is that
        reply's ``fault`` (null for None). In exec mode hello is asked once
        a pass; in serve mode once a start, then probes (give ``repairs``
        for them to be asked). A hook that does not override it says
        nothing of it (no ``fault`` member at all).
        """
        return None

    def ensure(self, consumer: Consumer, secret: str, deadline: Deadline) -> Optional[str]:
        """Makes the provision if missing, brings the secret; idempotent.

        Returns what it found changed by hand and brought back (``mended``),
        or None.
        """
        raise Unsupported

    def check(self, consumer: Consumer, secret: str, deadline: Deadline) -> Optional[str]:
        """Proves the provision works as the consumer would use it (raise on failure)."""
        raise Unsupported

    def held(self, deadline: Deadline) -> List[HeldEntry]:
        """Every provision the instance :func:`provider` made, and only those."""
        raise Unsupported

    def retire(self, name: str, deadline: Deadline) -> None:
        """Disables it, reversibly, when :func:`provider` made it; idempotent."""
        raise Unsupported

    def re_enable(self, name: str, deadline: Deadline) -> None:
        """Enables a retired one of :func:`provider`'s again; idempotent."""
        raise Unsupported

    def delete(self, name: str, deadline: Deadline) -> None:
        """Removes a retired one of :func:`provider`'s and its data; idempotent."""
        raise Unsupported

    def probe(self, fault: str, deadline: Deadline) -> None:
        """Returns when the fault is absent; raises HookError when present (unreachable: cannot tell)."""
        raise Unsupported

    def repair(self, fault: str, deadline: Deadline) -> str:
        """Repairs the fault; returns what it did."""
        raise Unsupported

    def by_hand(self, request: ByHand, deadline: Deadline) -> Optional[bool]:
        """Acts as a person would (conform's oracle; the loop never calls it).

        Returns the answer of ``works`` and ``reach``, None for the others.
        """
        raise Unsupported

    def classify(self, error: Exception) -> Optional[str]:
        """The class of an exception that is no HookError (None: mesh-provide reads the message)."""
        return "refused"

    def close(self) -> None:
        """Called once stdin closes (serve) or after the reply (exec): release connections."""


# --- the secrets and the log -------------------------------------------------

_lock = threading.Lock()
"""Held while the secrets change and while exec mode writes its reply."""

_writing = threading.Lock()
"""Held by the one thread writing serve mode's queued lines to stdout."""

_queued: "collections.deque[str]" = collections.deque()
"""Serve mode's lines not yet written, in the order they were queued."""

_secrets: List[str] = []
_out: IO[str] = sys.stdout
_err: IO[str] = sys.stderr
_serving = False
_log_name = "hook"
_exec_announced: Optional[List[str]] = None
_request_secret: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("mesh_hook_secret", default=None)
_request_provider: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("mesh_hook_provider", default=None)


def provider() -> str:
    """The provider instance (``module@machine``) the request being answered is made for.

    The request's ``provider``; else (a request without one, or outside a
    verb) ``MESH_PROVIDER``, the instance the hook was started for; else
    ``""``. In serve mode one process may be asked for more than one
    instance (conform's rule 17 does): act on this, not ``MESH_PROVIDER``.
    """
    return _request_provider.get() or os.environ.get("MESH_PROVIDER", "")


def redact(message: str, extra: Sequence[Optional[str]] = ()) -> str:
    """``message`` with the hook's announced secrets, the current request's secret and ``extra`` replaced."""
    hidden = [s for s in (*extra, _request_secret.get(), *_secrets) if isinstance(s, str) and s != ""]
    # Longest first: a secret that holds another is cut whole.
    for secret in sorted(set(hidden), key=len, reverse=True):
        message = message.replace(secret, REDACTED)
    return message


def log(message: str) -> None:
    """One line on stderr, which mesh-provide logs; secrets the kit knows are cut out."""
    text = redact(str(message)).replace("\r", " ").replace("\n", " ")
    try:
        _err.write(f"{_log_name}: {text}\n")
        _err.flush()
    except (OSError, ValueError):
        pass


def set_log_name(name: str) -> None:
    """The name first on every log line (run() sets it to the hook's name; call it to log before run)."""
    global _log_name
    _log_name = name


def announce_secrets(secrets: Sequence[str]) -> None:
    """Says the hook's own secrets (its administrator's password): the set mesh-provide redacts is replaced by it.

    Call it BEFORE anything that may write one (a log line, an error). In
    serve mode it writes the line ``{"secrets": [...]}`` at once; in exec
    mode the set goes in the call's reply. A set equal to the last one
    announced writes nothing.
    """
    global _exec_announced
    fresh = [str(s) for s in secrets if str(s) != ""]
    with _lock:
        if fresh == _secrets and (_serving or _exec_announced is not None):
            return
        _secrets[:] = fresh
        if not _serving:
            _exec_announced = list(fresh)
            return
        # Queued under the lock: two announcements are written in the order
        # their sets were taken.
        _queued.append(_json_line({"secrets": fresh}))
    _write_queued(wait=True)


def secrets() -> List[str]:
    """The hook's secrets as last announced."""
    with _lock:
        return list(_secrets)


_file_secrets: Dict[str, str] = {}
"""What read_secret_file read last, by variable (announced together)."""

_file_lock = threading.Lock()
"""Held while read_secret_file announces, so that sets go out in order."""


def read_secret_file(env_var: str, environ: Optional[Mapping[str, str]] = None) -> str:
    """A secret of the hook's own (its administrator's password), read from the file ``env_var`` names.

    The file is read again at every call, its surrounding whitespace (the
    line break) stripped, and the secret announced (:func:`announce_secrets`,
    with every other secret read through this function) BEFORE it is
    returned, so it is redacted before anything uses or logs it. Call it
    for every new administrator session (a connection, or every call): a
    rotated password then needs no restart.

    Raises :class:`HookError` of class ``secret-unreadable``, naming the
    variable and the file (never what it holds), when ``env_var`` is not set
    (in ``environ``, else ``os.environ``), the file cannot be read, or it
    holds only whitespace.
    """
    env = os.environ if environ is None else environ
    path = env.get(env_var) or ""
    if path == "":
        raise HookError("secret-unreadable", f"{env_var} is not set: it names the file holding the hook's administrator password")
    try:
        with open(path, encoding="utf-8") as file:
            secret = file.read().strip()
    except OSError as error:
        raise HookError("secret-unreadable",
                        f"the secret file {path} ({env_var}) cannot be read: {error.strerror or type(error).__name__}") from None
    except UnicodeDecodeError:
        raise HookError("secret-unreadable", f"the secret file {path} ({env_var}) is not UTF-8 text") from None
    if secret == "":
        raise HookError("secret-unreadable", f"the secret file {path} ({env_var}) is empty")
    with _file_lock:
        _file_secrets[env_var] = secret
        announce_secrets(sorted(set(_file_secrets.values())))
    return secret


def _json_line(value: Dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":")) + "\n"


def _write_line(value: Dict[str, Any]) -> None:
    """One JSON line on stdout (exec mode; the caller holds the lock)."""
    _out.write(_json_line(value))
    _out.flush()


def _write_queued(wait: bool = False) -> None:
    """Writes the queued lines, whole and in order, unless another thread is writing them.

    A thread that finds another writing leaves its line to that one, which
    looks at the queue again before it stops: no thread waits on another's
    write (a wait on a lock whose holder is itself waiting for the
    interpreter lock, after its write, is what made replies late). With
    ``wait`` (an announcement: its line must be out before the secret is
    used) it waits until the line is written, by itself or by the other.
    """
    if not _writing.acquire(blocking=wait):
        return
    while True:
        try:
            lines = []
            while _queued:
                lines.append(_queued.popleft())
            if lines:
                _out.write("".join(lines))
                _out.flush()
        except (OSError, ValueError):
            pass  # mesh-provide is gone: stdin closes next and serve ends
        finally:
            _writing.release()
        # A line queued while this thread wrote, by a thread that left it here.
        if not _queued or not _writing.acquire(blocking=False):
            return


# --- one request -------------------------------------------------------------


def _timeout_ms() -> float:
    try:
        return float(os.environ.get("MESH_HOOK_TIMEOUT_MS") or DEFAULT_TIMEOUT_MS)
    except ValueError:
        return DEFAULT_TIMEOUT_MS


def deadline_of(request: Dict[str, Any], now: Optional[float] = None) -> Deadline:
    """The request's deadline: its ``deadline_ms``, else ``MESH_HOOK_TIMEOUT_MS``, else 30 s."""
    ms = request.get("deadline_ms")
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms < 0:
        ms = _timeout_ms()
    return Deadline(float(ms), now)


def _text(request: Dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or value == "":
        raise BadRequest(f"the request's {key} is not a string")
    return value


def _optional_text(request: Dict[str, Any], key: str) -> Optional[str]:
    value = request.get(key)
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"the request's {key} is not a string")
    return value


def _ok(reply: Dict[str, Any], mended: Optional[str]) -> Dict[str, Any]:
    reply["ok"] = True
    if mended:
        reply["mended"] = str(mended)
    return reply


def _dispatch(hook: Hook, request: Dict[str, Any], reply: Dict[str, Any]) -> Dict[str, Any]:
    """Runs the verb; the reply's fields on success (raises on failure)."""
    verb = request.get("verb")
    deadline = deadline_of(request)
    if verb == "hello":
        hook.hello(deadline)
        fault = _admin_fault(hook, deadline)  # first: it may read and announce a secret
        reply["name"] = hook.name
        reply["secrets"] = secrets()
        reply["repairs"] = [{"fault": r.fault, "class": r.klass} for r in hook.repairs]
        reply.update(fault)
        return reply
    if verb in ("ensure", "check"):
        consumer = Consumer.from_json(request.get("consumer"), provider())
        secret = _text(request, "secret")
        method = hook.ensure if verb == "ensure" else hook.check
        return _ok(reply, method(consumer, secret, deadline))
    if verb == "held":
        entries = hook.held(deadline)
        reply["held"] = [{"consumer": e.consumer, "retired": bool(e.retired)} for e in entries]
        return reply
    if verb in ("retire", "re-enable", "delete"):
        name = _text(request, "consumer")
        {"retire": hook.retire, "re-enable": hook.re_enable, "delete": hook.delete}[verb](name, deadline)
        return _ok(reply, None)
    if verb == "probe":
        hook.probe(_text(request, "fault"), deadline)
        reply = _ok(reply, None)
        reply.update(_admin_fault(hook, deadline))
        return reply
    if verb == "repair":
        detail = hook.repair(_text(request, "fault"), deadline)
        reply = _ok(reply, None)
        reply["detail"] = str(detail or "")
        return reply
    if verb == "by-hand":
        action = _text(request, "action")
        asked = ByHand(
            action=action,
            consumer=_text(request, "consumer"),
            secret=_optional_text(request, "secret"),
            target=_optional_text(request, "target"),
            provider=provider(),
        )
        said = hook.by_hand(asked, deadline)
        reply = _ok(reply, None)
        if action == "works":
            reply["works"] = bool(said)
        elif action == "reach":
            reply["reaches"] = bool(said)
        return reply
    raise Unsupported


def _admin_fault(hook: Hook, deadline: Deadline) -> Dict[str, Any]:
    """The reply's ``fault`` member from :meth:`Hook.admin_fault`: none, null, or the fault."""
    if getattr(type(hook), "admin_fault", None) is Hook.admin_fault:
        return {}  # not overridden: the hook says nothing of it
    said = hook.admin_fault(deadline)
    if said is None:
        return {"fault": None}
    if not isinstance(said, ProviderFault):
        raise TypeError(f"admin_fault returned {type(said).__name__}, not a ProviderFault or None")
    fault: Dict[str, Any] = {"class": said.klass if said.klass in CLASSES else "refused"}
    if said.error:
        fault["error"] = redact(str(said.error))
    return {"fault": fault}


def answer(hook: Hook, request: Any) -> Dict[str, Any]:
    """The reply to one request (never raises). A failure says ``"ok": false``."""
    if not isinstance(request, dict):
        return {"ok": False, "class": "refused", "error": "the request is not a JSON object"}
    reply: Dict[str, Any] = {}
    if "id" in request:
        reply["id"] = request["id"]
    if request.get("v") != VERSION:
        return {**reply, "ok": False, "class": "refused",
                "error": f"{hook.name} speaks protocol version {VERSION}, not {request.get('v')!r}"}
    secret = request.get("secret") if isinstance(request.get("secret"), str) else None
    token = _request_secret.set(secret)
    asked_for = request.get("provider")
    provider_token = _request_provider.set(asked_for if isinstance(asked_for, str) and asked_for else None)
    try:
        return _dispatch(hook, request, reply)
    except Unsupported:
        return {**reply, "unsupported": True}
    except HookError as error:
        return _failed(reply, error.klass, error.message, secret)
    except BadRequest as error:
        return _failed(reply, "refused", f"{hook.name}: {error}", secret)
    except Exception as error:  # a bug in the hook: its reply, not a crash
        try:
            klass = hook.classify(error)
        except Exception:
            klass = "refused"
        return _failed(reply, klass, str(error) or type(error).__name__, secret)
    finally:
        _request_provider.reset(provider_token)
        _request_secret.reset(token)


def _failed(reply: Dict[str, Any], klass: Optional[str], message: str, secret: Optional[str]) -> Dict[str, Any]:
    # Belt and braces: mesh-provide redacts too, but a secret never leaves here.
    failed = {**reply, "ok": False, "error": redact(message, [secret])}
    if klass is not None:
        failed["class"] = klass if klass in CLASSES else "refused"
    return failed


# --- the two modes -----------------------------------------------------------


def serve(hook: Hook, stdin: IO[str], stdout: IO[str], threads: int = SERVE_THREADS) -> None:
    """Serve mode: every line of ``stdin`` a request, answered on ``stdout`` as soon as it is done.

    Up to ``threads`` requests run at once, each on the thread that read
    it: one thread at a time waits for the next line; when one comes it
    hands the waiting on (to a thread left idle, or a new one while fewer
    than ``threads`` are running) and answers the request itself, so a
    request costs no hand-off to another thread between its line and its
    verb. Returns once stdin has closed and every request read is answered.
    """
    global _out, _serving
    _out, _serving = stdout, True
    with _lock:
        pending = list(_secrets)
        if pending:
            # Secrets announced before serving began (at start-up) are said first.
            _queued.append(_json_line({"secrets": pending}))
    _write_queued(wait=True)

    reading = threading.Lock()  # held by the thread waiting for the next line
    counts = threading.Lock()
    workers: List[threading.Thread] = []
    idle = [1]  # threads not answering a request (the first is this one)

    def spawn() -> Optional[threading.Thread]:
        """A new thread when none is left to read the next line and fewer than ``threads`` run (counts held)."""
        if idle[0] > 0 or len(workers) + 1 >= max(threads, 1):
            return None
        idle[0] += 1
        worker = threading.Thread(target=work, name=f"mesh-hook-{len(workers) + 1}", daemon=True)
        workers.append(worker)
        return worker

    def work() -> None:
        while True:
            with reading:
                line = stdin.readline()
            if line == "":
                return  # stdin closed: every thread reads "" again and ends
            with counts:
                idle[0] -= 1
                new = spawn()
            if new is not None:
                new.start()
            try:
                _serve_line(hook, line)
            finally:
                with counts:
                    idle[0] += 1

    work()
    # The others end as they read the end of stdin; one may start another
    # before it does, so the list is read again until it is all joined.
    joined = 0
    while True:
        with counts:
            if joined == len(workers):
                break
            worker = workers[joined]
        worker.join()
        joined += 1


def _serve_line(hook: Hook, line: str) -> None:
    """One line of serve mode: its reply queued and written (a bad line logged and ignored)."""
    if line.strip() == "":
        return
    try:
        request = json.loads(line)
    except ValueError as error:
        log(f"a request line is not JSON ({error}); ignored")
        return
    if not isinstance(request, dict) or isinstance(request.get("id"), bool) or not isinstance(request.get("id"), int):
        log("a request without an integer id; ignored")
        return
    replied = answer(hook, request)
    try:
        text = _json_line(replied)
    except (TypeError, ValueError) as error:  # a value the hook returned that JSON cannot say
        text = _json_line(_failed({"id": request["id"]}, "refused", f"{hook.name}: the reply cannot be written: {error}",
                                  request.get("secret") if isinstance(request.get("secret"), str) else None))
    _queued.append(text)
    _write_queued()


def exec_once(hook: Hook, verb: str, stdin: IO[str], stdout: IO[str]) -> int:
    """Exec mode: the one request on ``stdin`` answered on ``stdout``; the exit code."""
    global _out, _serving, _exec_announced
    _out, _serving = stdout, False
    try:
        request = json.loads(stdin.read())
    except ValueError as error:
        log(f"the request on stdin is not JSON: {error}")
        return 2
    if not isinstance(request, dict):
        log("the request on stdin is not a JSON object")
        return 2
    if request.get("verb") != verb:
        log(f"the request says verb {request.get('verb')!r} but the hook was run as {verb!r}")
        return 2
    replied = answer(hook, request)
    with _lock:
        if _exec_announced is not None and request.get("verb") != "hello":
            replied["secrets"] = list(_exec_announced)
        _write_line(replied)
    return 1 if replied.get("ok") is False else 0


def run(hook: Hook, argv: Optional[Sequence[str]] = None) -> None:
    """Runs ``hook`` as the command line says (``serve`` or a verb), then exits."""
    global _log_name
    _log_name = hook.name
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        log("usage: hook serve | hook VERB (one JSON request on stdin)")
        sys.exit(2)
    if args[0] == "serve":
        try:
            serve(hook, sys.stdin, sys.stdout)
        finally:
            hook.close()
        sys.exit(0)
    code = exec_once(hook, args[0], sys.stdin, sys.stdout)
    hook.close()
    sys.exit(code)


def _reset_for_tests(out: IO[str], err: IO[str], name: str = "hook") -> None:
    """Forgets the secrets and points the kit's output at ``out`` and ``err`` (unit tests)."""
    global _out, _err, _serving, _log_name, _exec_announced
    with _lock:
        _secrets.clear()
        _queued.clear()
        _file_secrets.clear()
        _out, _err, _serving, _log_name, _exec_announced = out, err, False, name, None


__all__: List[str] = [
    "VERSION", "CLASSES", "BY_HAND_ACTIONS", "HookError", "Unsupported", "Consumer", "HeldEntry",
    "KnownFault", "ProviderFault", "ByHand", "Deadline", "Hook", "log", "set_log_name", "announce_secrets", "read_secret_file", "secrets", "redact",
    "deadline_of", "answer", "serve", "exec_once", "run",
]
