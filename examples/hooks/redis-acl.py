#!/usr/bin/env python3
"""A mesh-provide hook in Python over the Python kit (kits/python/mesh_hook.py), standard library only.

Redis ACL users, as examples/hooks/redis-acl.sh and redis-acl.mjs make them
(one may replace another on the same server): a user per consumer allowed
the keys `<consumer>:*`, its password the minted secret, checked by logging
in as the consumer. It speaks Redis's wire protocol (RESP2) on sockets.

    mesh-provide --hook examples/hooks/redis-acl.py --hook-mode serve ...   (or exec)

Serve mode keeps a pool of administrator connections (one per request in
flight at most); exec mode opens one a call. Every new administrator
connection reads the password file again (mesh_hook.read_secret_file), and
a changed password is announced before it is used, so a rotation needs no
restart. hello says the provider fault (admin_fault): the administrator
refused by Redis, or Redis out of reach, so status names it at once. Every wait is bounded by the call's deadline (the
request's `deadline_ms`), the connect by 5 s at most.

Settings (environment, which mesh-provide passes on but for its own MESH_*
variables; no secret in it):
  REDIS_ACL_HOST                 the Redis server (default 127.0.0.1)
  REDIS_ACL_PORT                 its port (default 6379)
  REDIS_ACL_ADMIN_USER           the ACL user the hook acts as (default mesh-admin)
  REDIS_ACL_ADMIN_PASSWORD_FILE  a file holding that user's password (required)

What it made carries the key pattern `%R~_mesh-provide:<module>@<machine>`
(read-only, on a key no consumer's pattern can match), its mark, naming the
provider instance the request was made for (`mesh_hook.provider()`): `held`
lists only users with the asking instance's mark; retire, re-enable and
delete leave any other user be; `ensure` refuses a user another instance
made (naming it) and a user without the mark, never touching them, and
adopts a user marked `%R~_mesh-provide` alone (before marks named their
instance), setting its instance's mark. Retire = `off`
(and its connections closed), re-enable = `on`, delete = its keys
`<consumer>:*` and the user go. `by-hand` (conform's oracle) acts as a person
at redis-cli would: change sets another password, make makes an unmarked
user, works and reach log in as the user, remove deletes what make made.

The kit is found beside this file (the package installs mesh_hook.py in
/usr/lib/mesh/hooks with it) or in ../../kits/python (the repository).
"""

from __future__ import annotations

import hashlib
import os
import secrets as randomness
import socket
import sys
import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Tuple

HERE = os.path.dirname(os.path.realpath(__file__))
for _place in (HERE, os.path.join(HERE, "..", "..", "kits", "python")):
    if os.path.isfile(os.path.join(_place, "mesh_hook.py")):
        sys.path.insert(0, os.path.normpath(_place))
        break

import mesh_hook  # noqa: E402  (found above)
from mesh_hook import ByHand, Consumer, Deadline, HeldEntry, HookError, log  # noqa: E402

NAME = "redis-acl.py"
#: The variable naming the file that holds the administrator's password.
PASSWORD_VAR = "REDIS_ACL_ADMIN_PASSWORD_FILE"
MARK = "%R~_mesh-provide"
#: The longest a connection may take to open, in seconds (the deadline may cut it shorter).
CONNECT_TIMEOUT = 5.0
#: Idle administrator connections kept in serve mode.
POOL_SIZE = 32


class ReplyError(Exception):
    """An error reply from Redis (`-WRONGPASS ...`)."""


class Lost(HookError):
    """The connection failed (unreachable): a pooled one is worth one more try on a new connection."""


class Redis:
    """One connection speaking RESP2, each wait bounded by the deadline given."""

    def __init__(self, host: str, port: int, deadline: Deadline) -> None:
        self.where = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=deadline.timeout(CONNECT_TIMEOUT))
        except socket.timeout:
            raise HookError("unreachable", f"cannot reach Redis at {self.where}: no answer in time") from None
        except OSError as error:
            raise HookError("unreachable", f"cannot reach Redis at {self.where}: {error.strerror or error}") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rb")
        self.reused = False

    def call(self, deadline: Deadline, *args: Any) -> Any:
        """Sends one command; its reply (a ReplyError for an error reply)."""
        self.sock.settimeout(deadline.timeout())
        out = bytearray(b"*%d\r\n" % len(args))
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            out += b"$%d\r\n%s\r\n" % (len(data), data)
        try:
            self.sock.sendall(out)
            return self.read()
        except socket.timeout:
            raise HookError("unreachable", f"Redis at {self.where} did not answer in time") from None
        except OSError as error:
            raise Lost("unreachable", f"Redis at {self.where} went away: {error.strerror or error}") from None

    def read(self) -> Any:
        line = self.file.readline()
        if not line.endswith(b"\r\n"):
            raise Lost("unreachable", f"Redis at {self.where} closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ReplyError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            return None if size < 0 else self.file.read(size + 2)[:-2].decode(errors="replace")
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self.read() for _ in range(size)]
        raise HookError("refused", f"Redis answered something that is not RESP2: {line[:20]!r}")

    def must(self, deadline: Deadline, *args: Any) -> Any:
        """Like call, raising an error reply."""
        reply = self.call(deadline, *args)
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def mark_of(provider: str) -> str:
    """The mark of what the instance `provider` (module@machine) makes."""
    return f"{MARK}:{provider}"


def maker_of(keys: str) -> Optional[str]:
    """The instance a user's key patterns mark it made by; "" for a mark from
    before instances (MARK alone); None when it carries no mark."""
    for word in keys.split(" "):
        if word == MARK:
            return ""
        if word.startswith(MARK + ":"):
            return word[len(MARK) + 1:]
    return None


def me() -> str:
    """The provider instance the request is made for (refused when none is said)."""
    provider = mesh_hook.provider()
    if not provider:
        raise HookError("refused", "the request names no provider instance and MESH_PROVIDER is not set")
    return provider


def rules(name: str, provider: str) -> List[str]:
    """The ACL rules of a consumer's user, but for on/off and its password."""
    return ["resetkeys", f"~{name}:*", mark_of(provider), "resetchannels", "nocommands", "+@all", "-@dangerous"]


def sha256(text: str) -> str:
    """How Redis lists a password."""
    return hashlib.sha256(text.encode()).hexdigest()


def not_ours(name: str) -> HookError:
    return HookError(
        "refused",
        f"user {name} exists and was not made by this hook (no {MARK}): not touching it; "
        f"remove it (ACL DELUSER {name}) to let the hook make it",
    )


class RedisAcl(mesh_hook.Hook):
    """The verbs over Redis ACL users."""

    name = NAME

    def __init__(self, env: Dict[str, str], pooled: bool) -> None:
        try:
            self.port = int(env.get("REDIS_ACL_PORT") or 6379)
        except ValueError:
            raise SystemExit(self.usage(f"REDIS_ACL_PORT is not a port: {env.get('REDIS_ACL_PORT')}"))
        self.host = env.get("REDIS_ACL_HOST") or "127.0.0.1"
        self.user = env.get("REDIS_ACL_ADMIN_USER") or "mesh-admin"
        self.env = env
        if not env.get(PASSWORD_VAR):
            raise SystemExit(self.usage(f"{PASSWORD_VAR} is not set"))
        self.pooled = pooled
        self.idle: List[Redis] = []
        self.lock = threading.Lock()

    @staticmethod
    def usage(words: str) -> int:
        log(words)
        return 2

    # --- the administrator ---------------------------------------------------

    def admin_password(self) -> str:
        """The password file read again, the password announced before any use of it."""
        return mesh_hook.read_secret_file(PASSWORD_VAR, self.env)

    def connect_admin(self, deadline: Deadline) -> Redis:
        """A new connection logged in as the administrator (the password file read again)."""
        password = self.admin_password()
        redis = Redis(self.host, self.port, deadline)
        try:
            reply = redis.call(deadline, "AUTH", self.user, password)
        except HookError:
            redis.close()
            raise
        if isinstance(reply, ReplyError):
            redis.close()
            raise HookError(
                "credentials-rejected",
                f"the hook's administrator {self.user} was refused: {reply} "
                f"(write its password to the file {PASSWORD_VAR} names)",
            )
        return redis

    @contextmanager
    def admin(self, deadline: Deadline) -> Iterator[Redis]:
        """An administrator's connection for one call: a pooled one (serve mode) or a new one."""
        redis: Optional[Redis] = None
        if self.pooled:
            with self.lock:
                redis = self.idle.pop() if self.idle else None
        if redis is None:
            redis = self.connect_admin(deadline)
        healthy = False
        try:
            yield redis
            healthy = True
        except ReplyError:
            healthy = True  # Redis answered: the connection is fine
            raise
        except HookError:
            healthy = False
            raise
        finally:
            if healthy and self.pooled:
                redis.reused = True
                with self.lock:
                    if len(self.idle) < POOL_SIZE:
                        self.idle.append(redis)
                        redis = None
            if redis is not None:
                redis.close()

    def with_admin(self, deadline: Deadline, work: Any) -> Any:
        """work(redis) on an administrator's connection; once more on a new one when a pooled one was lost."""
        try:
            with self.admin(deadline) as redis:
                reused = redis.reused
                return work(redis)
        except Lost:
            if not reused:
                raise
        with self.admin(deadline) as redis:
            return work(redis)

    def look_up(self, redis: Redis, deadline: Deadline, name: str, only_ours: bool = True) -> Optional[Dict[str, Any]]:
        """ACL GETUSER as a dict (None: no such user), refused when mesh did not make it."""
        user = redis.must(deadline, "ACL", "GETUSER", name)
        if user is None:
            return None
        found = dict(zip(user[0::2], user[1::2]))
        found["maker"] = maker_of(str(found.get("keys", "")))
        if only_ours and found["maker"] is None:
            raise not_ours(name)
        return found

    def look_up_mine(self, redis: Redis, deadline: Deadline, name: str) -> Optional[Dict[str, Any]]:
        """The user `name` when the asking instance made it; None for none, or for another
        instance's or one marked before instances (left be); refused when mesh did not make it."""
        user = self.look_up(redis, deadline, name)
        if user is None or user["maker"] != me():
            return None
        return user

    # --- the verbs -------------------------------------------------------------

    def hello(self, deadline: Deadline) -> None:
        self.admin_password()

    def admin_fault(self, deadline: Deadline) -> Optional[mesh_hook.ProviderFault]:
        """A new administrator's connection (the file read again): refused or out of reach is the fault."""
        try:
            self.connect_admin(deadline).close()
        except HookError as error:
            return mesh_hook.ProviderFault(error.klass or "refused", error.message)
        return None

    def ensure(self, consumer: Consumer, secret: str, deadline: Deadline) -> Optional[str]:
        """Makes the user if missing; brings back a changed password or changed rules (never on/off)."""
        name = consumer.name
        provider = consumer.provider or me()
        hashed = sha256(secret)

        def work(redis: Redis) -> Optional[str]:
            user = self.look_up(redis, deadline, name)
            if user is None:
                redis.must(deadline, "ACL", "SETUSER", name, "reset", "on", ">" + secret, *rules(name, provider))
                log(f"made the user {name}")
                return None
            maker = user["maker"]
            if maker and maker != provider:
                raise HookError("refused", f"user {name} was made by {maker} (its mark {mark_of(maker)}): not touching it")
            # A mark from before instances (maker ""): adopted, its rules compared as they were.
            held_mark = mark_of(provider) if maker else MARK
            passwords = user.get("passwords") or []
            same_password = passwords == [hashed]
            same_rules = (user.get("keys"), user.get("channels"), user.get("commands")) == (
                f"~{name}:* {held_mark}", "", "+@all -@dangerous")
            if same_password and same_rules and maker:
                return None
            redis.must(deadline, "ACL", "SETUSER", name, "resetpass", ">" + secret, *rules(name, provider))
            if not maker:
                log(f"adopted the user {name} (marked before instances) for {provider}")
            # Mended whenever it set the password or the rules: the loop, which
            # knows when it minted a new secret, does not count a rotation.
            by_hand = []
            if not same_password:
                by_hand.append("its password")
            if not same_rules:
                by_hand.append("its rules")
            if not by_hand:
                return None  # adopted, nothing else changed: not a mend
            words = f"brought {' and '.join(by_hand)} of user {name} to what the mesh asks"
            log(words)
            return words

        return self.with_admin(deadline, work)

    def login(self, name: str, secret: str, deadline: Deadline) -> Tuple[Redis, Optional[ReplyError]]:
        """A new connection logging in as `name`; the refusal, if it was."""
        redis = Redis(self.host, self.port, deadline)
        try:
            reply = redis.call(deadline, "AUTH", name, secret)
        except HookError:
            redis.close()
            raise
        return redis, reply if isinstance(reply, ReplyError) else None

    def check(self, consumer: Consumer, secret: str, deadline: Deadline) -> Optional[str]:
        """Logs in as the consumer on a connection of its own, and reads a key of its own."""
        name = consumer.name
        redis, refused = self.login(name, secret, deadline)
        try:
            if refused is not None:
                raise refused
            redis.must(deadline, "EXISTS", f"{name}:mesh-check")
        finally:
            redis.close()
        return None

    def held(self, deadline: Deadline) -> List[HeldEntry]:
        mark = mark_of(me())

        def work(redis: Redis) -> List[HeldEntry]:
            found = []
            for line in redis.must(deadline, "ACL", "LIST"):
                words = line.split(" ")
                if words[0] == "user" and mark in words:
                    found.append(HeldEntry(words[1], words[2] == "off"))
            return found

        return self.with_admin(deadline, work)

    def retire(self, name: str, deadline: Deadline) -> None:
        def work(redis: Redis) -> None:
            if self.look_up_mine(redis, deadline, name) is not None:
                redis.must(deadline, "ACL", "SETUSER", name, "off")
                redis.call(deadline, "CLIENT", "KILL", "USER", name)

        self.with_admin(deadline, work)

    def re_enable(self, name: str, deadline: Deadline) -> None:
        def work(redis: Redis) -> None:
            user = self.look_up(redis, deadline, name)
            if user is None:
                raise HookError("refused", f"the Redis user {name} is missing: nothing to enable")
            if user["maker"] == me():
                redis.must(deadline, "ACL", "SETUSER", name, "on")

        self.with_admin(deadline, work)

    def delete(self, name: str, deadline: Deadline) -> None:
        def work(redis: Redis) -> None:
            if self.look_up_mine(redis, deadline, name) is not None:
                self.delete_keys(redis, deadline, name)
                redis.must(deadline, "ACL", "DELUSER", name)
                log(f"deleted the user {name} and its keys")

        self.with_admin(deadline, work)

    @staticmethod
    def delete_keys(redis: Redis, deadline: Deadline, name: str) -> None:
        cursor = "0"
        while True:
            cursor, keys = redis.must(deadline, "SCAN", cursor, "MATCH", f"{name}:*", "COUNT", "500")
            if keys:
                redis.must(deadline, "UNLINK", *keys)
            if cursor == "0":
                break

    def by_hand(self, request: ByHand, deadline: Deadline) -> Optional[bool]:
        """As a person at redis-cli would (conform's oracle; the loop never calls it)."""
        name, action = request.consumer, request.action
        if action == "change":
            def change(redis: Redis) -> None:
                if self.look_up(redis, deadline, name, only_ours=False) is None:
                    raise HookError("refused", f"by hand: there is no user {name} to change")
                redis.must(deadline, "ACL", "SETUSER", name, "resetpass", ">" + randomness.token_hex(16))
            self.with_admin(deadline, change)
            return None
        if action == "make":
            secret = self.secret_of(request)
            self.with_admin(deadline, lambda redis: redis.must(
                deadline, "ACL", "SETUSER", name, "reset", "on", ">" + secret, f"~{name}:*", "+@all", "-@dangerous"))
            return None
        if action == "remove":
            def remove(redis: Redis) -> None:
                if self.look_up(redis, deadline, name, only_ours=False) is not None:
                    self.delete_keys(redis, deadline, name)
                    redis.must(deadline, "ACL", "DELUSER", name)
            self.with_admin(deadline, remove)
            return None
        if action == "works":
            redis, refused = self.login(name, self.secret_of(request), deadline)
            try:
                return refused is None and not isinstance(redis.call(deadline, "EXISTS", f"{name}:mesh-check"), ReplyError)
            finally:
                redis.close()
        if action == "reach":
            target = request.target
            if not target:
                raise HookError("refused", "by hand: reach needs a target")
            redis, refused = self.login(name, self.secret_of(request), deadline)
            try:
                if refused is not None:
                    raise HookError("refused", f"by hand: {name} cannot log in to try reaching {target}: {refused}")
                read = redis.call(deadline, "EXISTS", f"{target}:mesh-check")
                wrote = redis.call(deadline, "SET", f"{target}:mesh-reach", "1")
                if not isinstance(wrote, ReplyError):
                    redis.call(deadline, "DEL", f"{target}:mesh-reach")
                return not isinstance(read, ReplyError) or not isinstance(wrote, ReplyError)
            finally:
                redis.close()
        raise mesh_hook.Unsupported

    @staticmethod
    def secret_of(request: ByHand) -> str:
        if not request.secret:
            raise HookError("refused", f"by hand: {request.action} needs a secret")
        return request.secret

    def classify(self, error: Exception) -> Optional[str]:
        """Redis's own words: WRONGPASS and NOAUTH are refused credentials."""
        if isinstance(error, ReplyError) and str(error).startswith(("WRONGPASS", "NOAUTH")):
            return "credentials-rejected"
        return "refused"

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for redis in idle:
            redis.close()


def main() -> None:
    mesh_hook.set_log_name(NAME)
    serving = sys.argv[1:] == ["serve"]
    try:
        hook = RedisAcl(dict(os.environ), pooled=serving)
    except SystemExit as stop:
        sys.exit(stop.code)
    mesh_hook.run(hook)


if __name__ == "__main__":
    main()
