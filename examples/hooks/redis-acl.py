#!/usr/bin/env python3
"""A mesh-provide hook in Python, standard library only (exec mode).

Redis ACL users, as examples/hooks/redis-acl.mjs makes them: a user per
consumer allowed the keys and channels `<consumer>:*`, its password the
minted secret, checked by logging in as the consumer. It speaks Redis's wire
protocol (RESP) over a plain socket.

    mesh-provide --hook examples/hooks/redis-acl.py --hook-mode exec ...

Each call is one process: `redis-acl.py VERB` with one JSON request on
stdin, one JSON reply on stdout, exit 0 on success and 1 on failure. Logs go
to stderr; the secret arrives on stdin only and is never logged.

Settings (environment, which mesh-provide passes on but for its own MESH_*
variables; no secret in it):
  REDIS_URL                  redis://HOST:PORT, default redis://127.0.0.1:6379
  REDIS_ADMIN_USER           the ACL user administering the others, default `default`
  REDIS_ADMIN_PASSWORD_FILE  a file holding its password (trimmed); none: no password

What it made is the set `_mesh:provisioned`: `held` lists only the users in
it, and a user of that name that mesh did not make is refused, never touched.
Retire = `off` (and its connections closed), re-enable = `on`, delete = its
keys `<consumer>:*` and the user go.
"""

import hashlib
import json
import os
import socket
import sys
import urllib.parse

VERSION = 1
MADE = "_mesh:provisioned"
TIMEOUT = 5.0
NAME = "redis-acl.py"


def log(words):
    print(f"{NAME}: {words}", file=sys.stderr)


class HookError(Exception):
    """A failure with its class."""

    def __init__(self, klass, words):
        super().__init__(words)
        self.klass = klass


class ReplyError(Exception):
    """An error reply from Redis (`-WRONGPASS ...`)."""


class Redis:
    """One connection speaking RESP2."""

    def __init__(self, host, port):
        try:
            self.sock = socket.create_connection((host, port), timeout=TIMEOUT)
        except OSError as error:
            raise HookError("unreachable", f"cannot reach Redis at {host}:{port}: {error.strerror or error}") from None
        self.file = self.sock.makefile("rb")

    def call(self, *args):
        """Sends one command; its reply (ReplyError for an error reply)."""
        self.send([args])
        return self.read()

    def send(self, commands):
        out = bytearray()
        for args in commands:
            out += b"*%d\r\n" % len(args)
            for arg in args:
                data = arg if isinstance(arg, bytes) else str(arg).encode()
                out += b"$%d\r\n%s\r\n" % (len(data), data)
        try:
            self.sock.sendall(out)
        except OSError as error:
            raise HookError("unreachable", f"Redis went away: {error.strerror or error}") from None

    def read(self):
        try:
            line = self.file.readline()
        except OSError as error:
            raise HookError("unreachable", f"Redis went away: {error.strerror or error}") from None
        if not line.endswith(b"\r\n"):
            raise HookError("unreachable", "Redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ReplyError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self.file.read(size + 2)
            return data[:-2].decode(errors="replace")
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self.read() for _ in range(size)]
        raise HookError("refused", f"Redis answered something that is not RESP2: {line[:20]!r}")

    def must(self, *args):
        """Like call, raising an error reply."""
        reply = self.call(*args)
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def settings():
    """The settings from the environment; exits 2 naming what is wrong."""
    url = urllib.parse.urlsplit(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379")
    if url.scheme != "redis":
        fail_usage(f"REDIS_URL: want redis://HOST:PORT, not {url.scheme}:// (this hook speaks no TLS)")
    if url.username or url.password:
        fail_usage("REDIS_URL holds a user or password: give them as REDIS_ADMIN_USER and REDIS_ADMIN_PASSWORD_FILE")
    password = None
    path = os.environ.get("REDIS_ADMIN_PASSWORD_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as file:
                password = file.read().strip()
        except OSError as error:
            fail_usage(f"cannot read REDIS_ADMIN_PASSWORD_FILE: {error.strerror}")
        if password == "":
            fail_usage("REDIS_ADMIN_PASSWORD_FILE is empty")
    try:
        port = url.port or 6379
    except ValueError:
        fail_usage("REDIS_URL: the port is not a number")
    return {
        "host": url.hostname or "127.0.0.1",
        "port": port,
        "user": os.environ.get("REDIS_ADMIN_USER") or "default",
        "password": password,
    }


def fail_usage(words):
    log(words)
    sys.exit(2)


def administrator(config):
    """A connection logged in as the administrator."""
    redis = Redis(config["host"], config["port"])
    if config["password"] is not None:
        reply = redis.call("AUTH", config["user"], config["password"])
        if isinstance(reply, ReplyError):
            redis.close()
            raise HookError("refused", f"Redis refused the administrator {config['user']}: {reply}")
    return redis


def rules(name):
    """The ACL rules of a consumer's user, but for on/off and its password."""
    return ["resetkeys", f"~{name}:*", "resetchannels", f"&{name}:*", "nocommands", "+@all", "-@dangerous"]


def look_up(redis, name):
    """ACL GETUSER as a dict (None: no such user), refused when mesh did not make it."""
    redis.send([("ACL", "GETUSER", name), ("SISMEMBER", MADE, name)])
    user, made = redis.read(), redis.read()
    for reply in (user, made):
        if isinstance(reply, ReplyError):
            raise reply
    if user is None:
        return None
    if made != 1:
        raise HookError("refused", f"the Redis user {name} exists and mesh did not make it: not touched")
    return dict(zip(user[0::2], user[1::2]))


def ensure(redis, consumer, secret):
    """Makes the user if missing; brings back a changed password or changed rules."""
    name = consumer["name"]
    user = look_up(redis, name)
    if user is None:
        redis.send([("MULTI",), ("SADD", MADE, name), ("ACL", "SETUSER", name, "reset", "on", ">" + secret, *rules(name)), ("EXEC",)])
        replies = [redis.read() for _ in range(4)]
        if isinstance(replies[-1], ReplyError) or replies[-1] is None:
            raise HookError("refused", f"making the user {name}: {replies[-1]}")
        for reply in replies[-1]:
            if isinstance(reply, ReplyError):
                raise reply
        log(f"made the user {name}")
        return {}
    hashed = hashlib.sha256(secret.encode()).hexdigest()
    same = (
        user.get("passwords") == [hashed]
        and user.get("keys") == f"~{name}:*"
        and user.get("channels") == f"&{name}:*"
        and user.get("commands") == "+@all -@dangerous"
    )
    if not same:
        # One process a call remembers nothing: a rotation and a change by
        # hand look alike here, and both are brought back.
        redis.must("ACL", "SETUSER", name, "resetpass", ">" + secret, *rules(name))
        log(f"brought the user {name} back to its secret and rules")
    return {}


def check(config, consumer, secret):
    """Logs in as the consumer on a connection of its own, and reads a key of its own."""
    name = consumer["name"]
    redis = Redis(config["host"], config["port"])
    try:
        redis.must("AUTH", name, secret)
        redis.must("EXISTS", f"{name}:mesh-check")
    finally:
        redis.close()
    return {}


def held(redis):
    redis.send([("SMEMBERS", MADE), ("ACL", "LIST")])
    made, lines = redis.read(), redis.read()
    for reply in (made, lines):
        if isinstance(reply, ReplyError):
            raise reply
    mine = set(made)
    found = []
    for line in lines:
        words = line.split(" ")
        if words[0] == "user" and words[1] in mine:
            found.append({"consumer": words[1], "retired": "on" not in words[2:]})
    return {"held": found}


def retire(redis, name):
    if look_up(redis, name) is not None:
        redis.must("ACL", "SETUSER", name, "off")
        redis.call("CLIENT", "KILL", "USER", name)
    return {}


def re_enable(redis, name):
    if look_up(redis, name) is None:
        raise HookError("refused", f"the Redis user {name} is missing: nothing to enable")
    redis.must("ACL", "SETUSER", name, "on")
    return {}


def delete(redis, name):
    if look_up(redis, name) is not None:
        cursor = "0"
        while True:
            cursor, keys = redis.must("SCAN", cursor, "MATCH", f"{name}:*", "COUNT", "500")
            if keys:
                redis.must("UNLINK", *keys)
            if cursor == "0":
                break
        redis.must("ACL", "DELUSER", name)
        log(f"deleted the user {name} and its keys")
    redis.must("SREM", MADE, name)
    return {}


def classify(error):
    words = str(error)
    if words.startswith(("WRONGPASS", "NOAUTH")):
        return "credentials-rejected"
    return "refused"


def answer(config, request):
    """The reply to one request (and whether it succeeded)."""
    verb = request.get("verb")
    if request.get("v") != VERSION:
        return {"ok": False, "class": "refused", "error": f"{NAME} speaks protocol version {VERSION}"}, False
    if verb == "hello":
        secrets = [config["password"]] if config["password"] else []
        return {"name": NAME, "secrets": secrets, "repairs": []}, True
    if verb not in ("ensure", "check", "held", "retire", "re-enable", "delete"):
        return {"unsupported": True}, True
    secret = request.get("secret")
    redis = None
    try:
        if verb == "check":
            return check(config, request["consumer"], secret), True
        redis = administrator(config)
        if verb == "ensure":
            return ensure(redis, request["consumer"], secret), True
        if verb == "held":
            return held(redis), True
        target = request["consumer"]
        return {"retire": retire, "re-enable": re_enable, "delete": delete}[verb](redis, target), True
    except (HookError, ReplyError) as error:
        klass = error.klass if isinstance(error, HookError) else classify(error)
        words = str(error)
        for hidden in (secret, config["password"]):
            if hidden:
                words = words.replace(hidden, "[redacted]")
        return {"ok": False, "class": klass, "error": words}, False
    finally:
        if redis is not None:
            redis.close()


def verb_says_ok(verb):
    """Whether a success is said `ok` (every verb but hello and held, whose reply is their data)."""
    return verb not in ("hello", "held")


def main():
    if len(sys.argv) != 2:
        fail_usage("usage: redis-acl.py VERB (one JSON request on stdin)")
    config = settings()
    try:
        request = json.load(sys.stdin)
    except ValueError as error:
        fail_usage(f"the request on stdin is not JSON: {error}")
    if request.get("verb") != sys.argv[1]:
        fail_usage(f"the request says verb {request.get('verb')!r} but the hook was run as {sys.argv[1]!r}")
    reply, ok = answer(config, request)
    if ok and verb_says_ok(request["verb"]) and "unsupported" not in reply:
        reply = {"ok": True, **reply}
    json.dump({"id": request.get("id"), **reply}, sys.stdout)
    sys.stdout.write("\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
