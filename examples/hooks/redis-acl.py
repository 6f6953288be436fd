#!/usr/bin/env python3
"""A mesh-provide hook in Python, standard library only (exec mode).

Redis ACL users, as examples/hooks/redis-acl.sh and redis-acl.mjs make them
(one may replace another on the same server): a user per consumer allowed
the keys `<consumer>:*`, its password the minted secret, checked by logging
in as the consumer. It speaks Redis's wire protocol (RESP2) on a socket.

    mesh-provide --hook examples/hooks/redis-acl.py --hook-mode exec ...

Each call is one process: `redis-acl.py VERB` with one JSON request on
stdin, one JSON reply on stdout, exit 0 on success and 1 on failure. Logs go
to stderr; the secret arrives on stdin only and is never logged.

Settings (environment, which mesh-provide passes on but for its own MESH_*
variables; no secret in it):
  REDIS_ACL_HOST                 the Redis server (default 127.0.0.1)
  REDIS_ACL_PORT                 its port (default 6379)
  REDIS_ACL_ADMIN_USER           the ACL user the hook acts as (default mesh-admin)
  REDIS_ACL_ADMIN_PASSWORD_FILE  a file holding that user's password (required)

What it made carries the key pattern `%R~_mesh-provide` (read-only, on a key
no consumer's pattern can match), its mark: `held` lists only users with it,
and a user of that name without it is refused, never touched. Retire = `off`
(and its connections closed), re-enable = `on`, delete = its keys
`<consumer>:*` and the user go.
"""

import hashlib
import json
import os
import socket
import sys

VERSION = 1
MARK = "%R~_mesh-provide"
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
    env = os.environ
    try:
        port = int(env.get("REDIS_ACL_PORT") or 6379)
    except ValueError:
        fail_usage(f"REDIS_ACL_PORT is not a port: {env.get('REDIS_ACL_PORT')}")
    path = env.get("REDIS_ACL_ADMIN_PASSWORD_FILE")
    if not path:
        fail_usage("REDIS_ACL_ADMIN_PASSWORD_FILE is not set")
    try:
        with open(path, encoding="utf-8") as file:
            password = file.read().replace("\r", "").replace("\n", "")
    except OSError as error:
        fail_usage(f"the admin password file {path} cannot be read ({error.strerror})")
    if password == "":
        fail_usage(f"the admin password file {path} is empty")
    return {
        "host": env.get("REDIS_ACL_HOST") or "127.0.0.1",
        "port": port,
        "user": env.get("REDIS_ACL_ADMIN_USER") or "mesh-admin",
        "password": password,
    }


def fail_usage(words):
    log(words)
    sys.exit(2)


def administrator(config):
    """A connection logged in as the administrator."""
    redis = Redis(config["host"], config["port"])
    reply = redis.call("AUTH", config["user"], config["password"])
    if isinstance(reply, ReplyError):
        redis.close()
        raise HookError("credentials-rejected", f"the hook's administrator {config['user']} was refused: {reply}")
    return redis


def rules(name):
    """The ACL rules of a consumer's user, but for on/off and its password."""
    return ["resetkeys", f"~{name}:*", MARK, "resetchannels", "nocommands", "+@all", "-@dangerous"]


def look_up(redis, name):
    """ACL GETUSER as a dict (None: no such user), refused when mesh did not make it."""
    user = redis.must("ACL", "GETUSER", name)
    if user is None:
        return None
    user = dict(zip(user[0::2], user[1::2]))
    if MARK not in str(user.get("keys", "")).split(" "):
        raise HookError(
            "refused",
            f"user {name} exists and was not made by this hook (no {MARK}): not touching it; "
            f"remove it (ACL DELUSER {name}) to let the hook make it",
        )
    return user


def ensure(redis, consumer, secret):
    """Makes the user if missing; brings back a changed password or changed rules (never on/off)."""
    name = consumer["name"]
    user = look_up(redis, name)
    if user is None:
        redis.must("ACL", "SETUSER", name, "reset", "on", ">" + secret, *rules(name))
        log(f"made the user {name}")
        return {}
    hashed = hashlib.sha256(secret.encode()).hexdigest()
    changed = []
    if user.get("passwords") != [hashed]:
        changed.append("its password")
    if (user.get("keys"), user.get("channels"), user.get("commands")) != (f"~{name}:* {MARK}", "", "+@all -@dangerous"):
        changed.append("its rules")
    if not changed:
        return {}
    # One process a call remembers nothing: a rotated secret and a change by
    # hand look alike here; both are brought back, and said so.
    redis.must("ACL", "SETUSER", name, "resetpass", ">" + secret, *rules(name))
    words = f"brought {' and '.join(changed)} of user {name} to what the mesh asks"
    log(words)
    return {"mended": words}


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
    found = []
    for line in redis.must("ACL", "LIST"):
        words = line.split(" ")
        if words[0] == "user" and MARK in words:
            found.append({"consumer": words[1], "retired": words[2] == "off"})
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
        return {"name": NAME, "secrets": [config["password"]], "repairs": []}, True
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
