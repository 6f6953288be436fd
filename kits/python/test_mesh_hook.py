"""Unit tests of mesh_hook: a request line in, a reply line out, and bad input.

    python3 -m unittest discover -s kits/python      (scripts/test runs it)
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import unittest
from typing import Any, Dict, List, Optional

import mesh_hook
from mesh_hook import ByHand, Consumer, Deadline, HeldEntry, HookError

HERE = os.path.dirname(os.path.abspath(__file__))
ADMIN = "admin-pw-31415"


class Memory(mesh_hook.Hook):
    """A hook over a dict: name -> [password, retired, made by hand]."""

    name = "memory"

    def __init__(self) -> None:
        self.users: Dict[str, List[Any]] = {}
        self.deadlines: List[float] = []
        self.release = threading.Event()

    def hello(self, deadline: Deadline) -> None:
        mesh_hook.announce_secrets([ADMIN])

    def ensure(self, consumer: Consumer, secret: str, deadline: Deadline) -> Optional[str]:
        self.deadlines.append(deadline.remaining())
        if consumer.name == "slow":
            # Waits for a later request: several must be in flight.
            if not self.release.wait(deadline.timeout(5)):
                raise HookError("unreachable", "never released")
        if consumer.name == "boom":
            raise RuntimeError(f"bug while using {secret} and {ADMIN}")
        if consumer.name == "rotate":
            mesh_hook.announce_secrets(["new-admin-pw"])
            mesh_hook.log("connected with new-admin-pw")
        user = self.users.get(consumer.name)
        if user is None:
            self.users[consumer.name] = [secret, False, False]
            return None
        if user[2]:
            raise HookError("refused", f"{consumer.name} was not made by this hook")
        if user[0] != secret:
            user[0] = secret
            return "brought its password back"
        return None

    def check(self, consumer: Consumer, secret: str, deadline: Deadline) -> Optional[str]:
        if consumer.name == "fast":
            self.release.set()
        user = self.users.get(consumer.name)
        if user is None or user[0] != secret or user[1]:
            raise HookError("credentials-rejected", f"WRONGPASS for {consumer.name} with {secret}")
        return None

    def held(self, deadline: Deadline) -> List[HeldEntry]:
        return [HeldEntry(n, u[1]) for n, u in sorted(self.users.items()) if not u[2]]

    def retire(self, name: str, deadline: Deadline) -> None:
        if name in self.users:
            self.users[name][1] = True

    def by_hand(self, request: ByHand, deadline: Deadline) -> Optional[bool]:
        if request.action == "make":
            self.users[request.consumer] = [request.secret, False, True]
            return None
        if request.action == "works":
            user = self.users.get(request.consumer)
            return user is not None and user[0] == request.secret and not user[1]
        if request.action == "reach":
            return False
        raise mesh_hook.Unsupported


CONSUMER = {"name": "forge", "machine": "app-1", "provision": "redis-acl", "options": {}}


def request(id: int, verb: str, **fields: Any) -> Dict[str, Any]:
    return {"v": 1, "id": id, "verb": verb, "deadline_ms": 5000, **fields}


class KitTest(unittest.TestCase):
    def setUp(self) -> None:
        self.out = io.StringIO()
        self.err = io.StringIO()
        mesh_hook._reset_for_tests(self.out, self.err, "memory")
        self.hook = Memory()

    def serve(self, *requests: Any) -> List[Dict[str, Any]]:
        """Serves the lines (dicts as JSON, strings as they are); the lines written, parsed."""
        text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in requests)
        mesh_hook.serve(self.hook, io.StringIO(text), self.out)
        return [json.loads(line) for line in self.out.getvalue().splitlines()]

    def execute(self, verb: str, text: str) -> "tuple[int, Dict[str, Any]]":
        code = mesh_hook.exec_once(self.hook, verb, io.StringIO(text), self.out)
        lines = self.out.getvalue().splitlines()
        return code, (json.loads(lines[0]) if lines else {})


class ServeModeTest(KitTest):
    def test_an_ensure_line_in_gives_one_ok_line_out_with_its_id(self) -> None:
        lines = self.serve(request(7, "ensure", consumer=CONSUMER, secret="s1"))
        self.assertEqual(lines, [{"id": 7, "ok": True}])
        self.assertEqual(self.hook.users["forge"][0], "s1")

    def test_hello_says_the_name_and_announces_the_secrets_first(self) -> None:
        lines = self.serve(request(1, "hello"))
        self.assertEqual(lines[0], {"secrets": [ADMIN]}, "a secrets line before the reply")
        self.assertEqual(lines[1], {"id": 1, "name": "memory", "secrets": [ADMIN], "repairs": []})

    def test_held_lists_what_was_made_and_retire_marks_it(self) -> None:
        lines = self.serve(
            request(1, "ensure", consumer=CONSUMER, secret="s1"),
        )
        self.out.truncate(0)
        self.out.seek(0)
        lines = self.serve(request(2, "retire", consumer="forge"))
        self.assertEqual(lines, [{"id": 2, "ok": True}])
        self.out.truncate(0)
        self.out.seek(0)
        lines = self.serve(request(3, "held"))
        self.assertEqual(lines, [{"id": 3, "held": [{"consumer": "forge", "retired": True}]}])

    def test_a_changed_secret_is_said_mended(self) -> None:
        self.hook.users["forge"] = ["old", False, False]
        lines = self.serve(request(4, "ensure", consumer=CONSUMER, secret="new"))
        self.assertEqual(lines, [{"id": 4, "ok": True, "mended": "brought its password back"}])

    def test_a_failure_says_its_class_and_never_the_secret(self) -> None:
        lines = self.serve(request(5, "check", consumer=CONSUMER, secret="the-secret-xyz"))
        self.assertEqual(lines[0]["ok"], False)
        self.assertEqual(lines[0]["class"], "credentials-rejected")
        self.assertEqual(lines[0]["error"], "WRONGPASS for forge with [redacted]")

    def test_a_bug_in_a_verb_is_a_refused_reply_without_secrets(self) -> None:
        self.serve(request(1, "hello"))
        self.out.truncate(0)
        self.out.seek(0)
        boom = {**CONSUMER, "name": "boom"}
        lines = self.serve(request(6, "ensure", consumer=boom, secret="sec-42"))
        self.assertEqual(lines[-1:], [{"id": 6, "ok": False, "class": "refused",
                                  "error": "bug while using [redacted] and [redacted]"}])

    def test_a_verb_the_hook_lacks_is_unsupported(self) -> None:
        lines = self.serve(request(8, "delete", consumer="forge"), request(9, "probe", fault="f"),
                           request(10, "frobnicate"))
        self.assertEqual(sorted(lines, key=lambda l: l["id"]),
                         [{"id": 8, "unsupported": True}, {"id": 9, "unsupported": True},
                          {"id": 10, "unsupported": True}])

    def test_several_requests_are_in_flight_and_answered_as_each_is_done(self) -> None:
        self.hook.users["fast"] = ["f", False, False]
        slow = {**CONSUMER, "name": "slow"}
        fast = {**CONSUMER, "name": "fast"}
        lines = self.serve(request(1, "ensure", consumer=slow, secret="s"),
                           request(2, "check", consumer=fast, secret="f"))
        self.assertEqual([l["id"] for l in lines], [2, 1], "the later, quick one answered first")
        self.assertTrue(all(l["ok"] for l in lines), lines)

    def test_many_requests_at_once_get_one_whole_line_each(self) -> None:
        for i in range(300):
            self.hook.users[f"c{i}"] = ["s", False, False]
        lines = self.serve(*(request(i + 1, "check", consumer={**CONSUMER, "name": f"c{i}"}, secret="s")
                             for i in range(300)))
        self.assertEqual(sorted(l["id"] for l in lines), list(range(1, 301)))
        self.assertTrue(all(l == {"id": l["id"], "ok": True} for l in lines))

    def test_no_more_requests_run_at_once_than_its_threads_and_the_rest_wait_their_turn(self) -> None:
        running = [0]
        changed = threading.Condition()
        release = threading.Event()

        def check(consumer: Consumer, secret: str, deadline: Deadline) -> None:
            with changed:
                running[0] += 1
                changed.notify_all()
            release.wait(5)
            with changed:
                running[0] -= 1

        def running_reaches(count: int, seconds: float) -> bool:
            with changed:
                return changed.wait_for(lambda: running[0] >= count, seconds)

        self.hook.check = check  # type: ignore[method-assign]
        text = "".join(json.dumps(request(i, "check", consumer=CONSUMER, secret="s")) + "\n" for i in range(1, 7))
        serving = threading.Thread(target=mesh_hook.serve, args=(self.hook, io.StringIO(text), self.out, 3))
        serving.start()
        try:
            self.assertTrue(running_reaches(3, 5), "three requests run at once")
            self.assertFalse(running_reaches(4, 0.3), "a fourth waits for one of the three threads")
        finally:
            release.set()
            serving.join(10)
        lines = [json.loads(line) for line in self.out.getvalue().splitlines()]
        self.assertEqual(sorted(l["id"] for l in lines), [1, 2, 3, 4, 5, 6])
        self.assertTrue(all(l["ok"] for l in lines), lines)

    def test_one_thread_answers_every_line_in_turn(self) -> None:
        self.hook.users["forge"] = ["s", False, False]
        text = "".join(json.dumps(request(i, "check", consumer=CONSUMER, secret="s")) + "\n" for i in range(1, 5))
        mesh_hook.serve(self.hook, io.StringIO(text), self.out, threads=1)
        lines = [json.loads(line) for line in self.out.getvalue().splitlines()]
        self.assertEqual(lines, [{"id": i, "ok": True} for i in range(1, 5)])

    def test_a_reply_json_cannot_say_is_a_refused_reply_and_serving_goes_on(self) -> None:
        self.hook.held = lambda deadline: [HeldEntry(object())]  # type: ignore[method-assign, arg-type]
        lines = self.serve(request(1, "held"), request(2, "retire", consumer="forge"))
        by_id = {l["id"]: l for l in lines}
        self.assertEqual((by_id[1]["ok"], by_id[1]["class"]), (False, "refused"), by_id[1])
        self.assertIn("memory: the reply cannot be written", by_id[1]["error"])
        self.assertEqual(by_id[2], {"id": 2, "ok": True})

    def test_bad_lines_are_ignored_and_logged_and_the_rest_answered(self) -> None:
        lines = self.serve("this is no json", json.dumps({"v": 1, "verb": "held"}),
                           json.dumps({"v": 1, "id": True, "verb": "held"}), "[1,2]", "",
                           request(3, "held"))
        self.assertEqual(lines, [{"id": 3, "held": []}])
        log = self.err.getvalue()
        self.assertIn("memory: a request line is not JSON", log)
        self.assertEqual(log.count("a request without an integer id; ignored"), 3, log)

    def test_a_request_of_another_version_is_refused(self) -> None:
        lines = self.serve({"v": 2, "id": 4, "verb": "held"})
        self.assertEqual(lines[0]["ok"], False)
        self.assertEqual(lines[0]["class"], "refused")
        self.assertIn("version 1", lines[0]["error"])

    def test_a_request_missing_its_fields_is_refused(self) -> None:
        lines = self.serve(request(5, "ensure", consumer={"machine": "x"}, secret="s"),
                           request(6, "check", consumer=CONSUMER),
                           request(7, "retire", consumer=3))
        by_id = {l["id"]: l for l in lines}
        for id in (5, 6, 7):
            self.assertEqual((by_id[id]["ok"], by_id[id]["class"]), (False, "refused"), by_id[id])

    def test_a_new_secret_is_announced_before_the_log_line_and_cut_out_of_it(self) -> None:
        rotate = {**CONSUMER, "name": "rotate"}
        lines = self.serve(request(1, "ensure", consumer=rotate, secret="s"))
        self.assertEqual(lines[0], {"secrets": ["new-admin-pw"]})
        self.assertEqual(lines[1], {"id": 1, "ok": True})
        self.assertIn("memory: connected with [redacted]", self.err.getvalue())
        self.assertNotIn("new-admin-pw", self.err.getvalue())

    def test_an_unchanged_secret_set_writes_no_line_again(self) -> None:
        lines = self.serve(request(1, "hello"), request(2, "hello"))
        self.assertEqual(sum(1 for l in lines if "id" not in l), 1, lines)

    def test_by_hand_answers_works_and_reaches(self) -> None:
        lines = self.serve(request(1, "by-hand", action="make", consumer="person", secret="p"))
        self.assertEqual(lines, [{"id": 1, "ok": True}])
        self.out.truncate(0)
        self.out.seek(0)
        lines = self.serve(request(2, "by-hand", action="works", consumer="person", secret="p"),
                           request(3, "by-hand", action="reach", consumer="person", secret="p", target="forge"),
                           request(4, "by-hand", action="remove", consumer="person"))
        by_id = {l["id"]: l for l in lines}
        self.assertEqual(by_id[2], {"id": 2, "ok": True, "works": True})
        self.assertEqual(by_id[3], {"id": 3, "ok": True, "reaches": False})
        self.assertEqual(by_id[4], {"id": 4, "unsupported": True})

    def test_the_deadline_is_what_the_request_gives(self) -> None:
        self.serve({**request(1, "ensure", consumer=CONSUMER, secret="s"), "deadline_ms": 1500})
        self.assertTrue(1.0 < self.hook.deadlines[0] <= 1.5, self.hook.deadlines)


class ProviderTest(KitTest):
    """Every verb is told the provider instance its request is made for."""

    def test_each_verb_sees_its_requests_provider_and_the_consumer_carries_it(self) -> None:
        seen: List[Any] = []

        class Seeing(Memory):
            def ensure(self, consumer: Consumer, secret: str, deadline: Deadline) -> Optional[str]:
                seen.append(("ensure", consumer.provider, mesh_hook.provider()))
                return None

            def held(self, deadline: Deadline) -> List[HeldEntry]:
                seen.append(("held", mesh_hook.provider()))
                return []

            def retire(self, name: str, deadline: Deadline) -> None:
                seen.append(("retire", mesh_hook.provider()))

            def by_hand(self, request: ByHand, deadline: Deadline) -> Optional[bool]:
                seen.append(("by-hand", request.provider))
                return None

        self.hook = Seeing()
        os.environ["MESH_PROVIDER"] = "redis@db-1"
        try:
            self.serve(
                request(1, "ensure", consumer=CONSUMER, secret="s", provider="redis@db-1"),
                request(2, "held", provider="redis@db-2"),
                request(3, "retire", consumer="forge", provider="redis@db-2"),
                request(4, "held"),
                request(5, "by-hand", action="change", consumer="forge", provider="redis@db-3"),
            )
            outside = mesh_hook.provider()
        finally:
            del os.environ["MESH_PROVIDER"]
        self.assertEqual(
            sorted(seen, key=str),
            sorted(
                [
                    ("ensure", "redis@db-1", "redis@db-1"),
                    ("held", "redis@db-2"),
                    ("retire", "redis@db-2"),
                    ("held", "redis@db-1"),
                    ("by-hand", "redis@db-3"),
                ],
                key=str,
            ),
            "a request without provider falls back to MESH_PROVIDER",
        )
        self.assertEqual(outside, "redis@db-1", "outside a verb: MESH_PROVIDER")
        self.assertEqual(mesh_hook.provider(), "", "neither: empty")

    def test_exec_mode_gives_the_requests_provider(self) -> None:
        seen: List[str] = []

        class Seeing(Memory):
            def held(self, deadline: Deadline) -> List[HeldEntry]:
                seen.append(mesh_hook.provider())
                return []

        self.hook = Seeing()
        code, _ = self.execute("held", json.dumps(request(1, "held", provider="pg@db-9")))
        self.assertEqual((code, seen), (0, ["pg@db-9"]))


class ExecModeTest(KitTest):
    def test_one_request_in_one_reply_out_exit_0(self) -> None:
        code, reply = self.execute("ensure", json.dumps(request(3, "ensure", consumer=CONSUMER, secret="s")))
        self.assertEqual((code, reply), (0, {"id": 3, "ok": True}))

    def test_a_failure_exits_1_with_its_class(self) -> None:
        code, reply = self.execute("check", json.dumps(request(3, "check", consumer=CONSUMER, secret="s")))
        self.assertEqual(code, 1)
        self.assertEqual(reply["class"], "credentials-rejected")

    def test_secrets_announced_during_the_call_go_in_its_reply(self) -> None:
        rotate = {**CONSUMER, "name": "rotate"}
        code, reply = self.execute("ensure", json.dumps(request(1, "ensure", consumer=rotate, secret="s")))
        self.assertEqual((code, reply), (0, {"id": 1, "ok": True, "secrets": ["new-admin-pw"]}))
        self.assertEqual(len(self.out.getvalue().splitlines()), 1, "exec mode writes the reply only")

    def test_hello_carries_the_secrets(self) -> None:
        code, reply = self.execute("hello", json.dumps({"v": 1, "id": 1, "verb": "hello"}))
        self.assertEqual((code, reply["secrets"]), (0, [ADMIN]))

    def test_a_request_that_is_not_json_exits_2_with_no_reply(self) -> None:
        code, reply = self.execute("ensure", "{not json")
        self.assertEqual((code, reply), (2, {}))
        self.assertIn("not JSON", self.err.getvalue())

    def test_a_request_of_another_verb_than_the_argument_exits_2(self) -> None:
        code, _ = self.execute("check", json.dumps(request(1, "delete", consumer="forge")))
        self.assertEqual(code, 2)
        self.assertIn("the hook was run as 'check'", self.err.getvalue())

    def test_a_missing_deadline_falls_back_to_the_hooks_timeout(self) -> None:
        os.environ["MESH_HOOK_TIMEOUT_MS"] = "2500"
        try:
            deadline = mesh_hook.deadline_of({"v": 1, "id": 1, "verb": "held"})
        finally:
            del os.environ["MESH_HOOK_TIMEOUT_MS"]
        self.assertTrue(2.0 < deadline.remaining() <= 2.5)
        self.assertEqual(mesh_hook.deadline_of({"deadline_ms": "soon"}, now=0).at, 30.0)


class Faulty(Memory):
    """Memory whose administrator is refused while ``self.fault`` is set."""

    repairs = (mesh_hook.KnownFault("disk-full"),)

    def __init__(self) -> None:
        super().__init__()
        self.fault: Optional[mesh_hook.ProviderFault] = None

    def probe(self, fault: str, deadline: Deadline) -> None:
        if fault == "gone":
            raise HookError("unreachable", "cannot tell")

    def admin_fault(self, deadline: Deadline) -> Optional[mesh_hook.ProviderFault]:
        # As a hook that reads its password (read_secret_file) does: the
        # secret a fault may quote is announced before the fault is said,
        # whichever of hello and probe (answered on threads of their own in
        # serve mode) comes first.
        mesh_hook.announce_secrets([ADMIN])
        return self.fault


class ProviderFaultTest(KitTest):
    def setUp(self) -> None:
        super().setUp()
        self.hook = Faulty()

    def test_hello_and_probe_say_the_fault_and_null_once_it_is_gone(self) -> None:
        self.hook.fault = mesh_hook.ProviderFault("credentials-rejected", f"WRONGPASS for mesh-admin ({ADMIN})")
        replies = self.serve(request(1, "hello"), request(2, "probe", fault="disk-full"))
        by_id = {r.get("id"): r for r in replies}
        said = {"class": "credentials-rejected", "error": "WRONGPASS for mesh-admin ([redacted])"}
        self.assertEqual(by_id[1]["fault"], said)
        self.assertNotIn("ok", by_id[1])
        self.assertEqual((by_id[2]["ok"], by_id[2]["fault"]), (True, said))
        self.hook.fault = None
        self.out.truncate(0)
        self.out.seek(0)
        replies = self.serve(request(3, "hello"), request(4, "probe", fault="disk-full"))
        self.assertEqual([r["fault"] for r in replies if "id" in r], [None, None])

    def test_a_class_not_of_the_four_is_refused_and_no_error_is_left_out(self) -> None:
        self.hook.fault = mesh_hook.ProviderFault("sad")
        (reply,) = [r for r in self.serve(request(1, "hello")) if "id" in r]
        self.assertEqual(reply["fault"], {"class": "refused"})

    def test_a_probe_that_fails_says_no_fault(self) -> None:
        self.hook.fault = mesh_hook.ProviderFault("unreachable", "down")
        (reply,) = self.serve(request(1, "probe", fault="gone"))
        self.assertEqual((reply["ok"], reply.get("fault", "absent")), (False, "absent"))

    def test_exec_mode_hello_says_it(self) -> None:
        self.hook.fault = mesh_hook.ProviderFault("unreachable", "no route to redis")
        code, reply = self.execute("hello", json.dumps(request(1, "hello")))
        self.assertEqual((code, reply["fault"]), (0, {"class": "unreachable", "error": "no route to redis"}))

    def test_a_hook_that_does_not_say_has_no_fault_member(self) -> None:
        self.hook = Memory()
        (reply,) = [r for r in self.serve(request(1, "hello")) if "id" in r]
        self.assertNotIn("fault", reply)


class SecretFileTest(KitTest):
    def setUp(self) -> None:
        super().setUp()
        import tempfile

        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.file = os.path.join(self.dir.name, "admin")
        self.env = {"T_ADMIN_FILE": self.file}

    def write(self, text: str) -> None:
        with open(self.file, "w", encoding="utf-8") as f:
            f.write(text)

    def test_it_trims_announces_first_and_reads_a_rotation_again(self) -> None:
        mesh_hook._serving = True  # announcements are lines, as in serve mode
        self.addCleanup(setattr, mesh_hook, "_serving", False)
        self.write("  first-pw \n")
        self.assertEqual(mesh_hook.read_secret_file("T_ADMIN_FILE", self.env), "first-pw")
        self.assertEqual(self.out.getvalue(), '{"secrets":["first-pw"]}\n')
        mesh_hook.read_secret_file("T_ADMIN_FILE", self.env)
        self.assertEqual(self.out.getvalue().count("\n"), 1, "an unchanged secret writes nothing again")
        self.write("second-pw\r\n")
        self.assertEqual(mesh_hook.read_secret_file("T_ADMIN_FILE", self.env), "second-pw")
        self.assertTrue(self.out.getvalue().endswith('{"secrets":["second-pw"]}\n'), self.out.getvalue())
        other = os.path.join(self.dir.name, "other")
        with open(other, "w", encoding="utf-8") as f:
            f.write("other-pw")
        mesh_hook.read_secret_file("T_OTHER_FILE", {"T_OTHER_FILE": other})
        self.assertEqual(mesh_hook.secrets(), ["other-pw", "second-pw"], "two files' secrets, both announced")

    def test_it_fails_secret_unreadable_naming_file_and_variable_never_the_content(self) -> None:
        cases = [
            ({"T_ADMIN_FILE": os.path.join(self.dir.name, "missing")}, "No such file"),
            ({"T_ADMIN_FILE": self.file}, "is empty"),
            ({"T_ADMIN_FILE": self.dir.name}, "Is a directory"),
        ]
        self.write(" \n\t\n")
        for env, words in cases:
            with self.assertRaises(HookError) as caught:
                mesh_hook.read_secret_file("T_ADMIN_FILE", env)
            self.assertEqual(caught.exception.klass, "secret-unreadable")
            for part in (env["T_ADMIN_FILE"], "T_ADMIN_FILE", words):
                self.assertIn(part, caught.exception.message)
        with self.assertRaises(HookError) as caught:
            mesh_hook.read_secret_file("T_ADMIN_FILE", {})
        self.assertIn("T_ADMIN_FILE is not set", caught.exception.message)
        self.assertEqual(mesh_hook.secrets(), [], "nothing announced")

    def test_its_failure_is_the_verbs_failure(self) -> None:
        class Reads(Memory):
            def hello(inner, deadline: Deadline) -> None:  # noqa: N805
                mesh_hook.read_secret_file("T_ADMIN_FILE", self.env)

        self.hook = Reads()
        (reply,) = self.serve(request(1, "hello"))
        self.assertEqual((reply["ok"], reply["class"]), (False, "secret-unreadable"))
        self.assertIn(self.file, reply["error"])


class MessageTest(unittest.TestCase):
    def test_a_hook_error_says_its_message_and_words_is_deprecated(self) -> None:
        error = HookError("refused", "the message")
        self.assertEqual(error.message, "the message")
        self.assertEqual(str(error), "the message")
        with self.assertWarns(DeprecationWarning):
            self.assertEqual(error.words, "the message")
        with self.assertWarns(DeprecationWarning):
            old = HookError("refused", words="said the old way")
        self.assertEqual(old.message, "said the old way")


class DeadlineTest(unittest.TestCase):
    def test_a_passed_deadline_is_expired_and_check_raises_unreachable(self) -> None:
        deadline = Deadline(0)
        time.sleep(0.002)
        self.assertTrue(deadline.expired())
        self.assertEqual(deadline.timeout(), 0.001)
        with self.assertRaises(HookError) as raised:
            deadline.check("the login")
        self.assertEqual(raised.exception.klass, "unreachable")

    def test_timeout_is_capped(self) -> None:
        self.assertEqual(Deadline(60_000).timeout(5.0), 5.0)


class ProcessTest(unittest.TestCase):
    """The kit in a process of its own, as mesh-provide runs a hook."""

    SCRIPT = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, %r)
        import mesh_hook

        class Tiny(mesh_hook.Hook):
            name = "tiny"
            def check(self, consumer, secret, deadline):
                if secret != "right":
                    raise mesh_hook.HookError("credentials-rejected", "wrong " + secret)

        mesh_hook.run(Tiny())
        """
    ) % HERE

    def run_hook(self, args: List[str], stdin: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", self.SCRIPT, *args], input=stdin,
                              capture_output=True, text=True, timeout=30)

    def test_exec_mode_exits_by_the_reply(self) -> None:
        good = self.run_hook(["check"], json.dumps(request(1, "check", consumer=CONSUMER, secret="right")))
        self.assertEqual((good.returncode, json.loads(good.stdout)), (0, {"id": 1, "ok": True}))
        bad = self.run_hook(["check"], json.dumps(request(1, "check", consumer=CONSUMER, secret="nope")))
        self.assertEqual(bad.returncode, 1)
        self.assertEqual(json.loads(bad.stdout)["error"], "wrong [redacted]")

    def test_serve_mode_answers_each_line_and_ends_with_stdin(self) -> None:
        lines = "\n".join(json.dumps(request(i, "check", consumer=CONSUMER, secret="right")) for i in range(1, 6))
        done = self.run_hook(["serve"], lines + "\n")
        self.assertEqual(done.returncode, 0, done.stderr)
        ids = sorted(json.loads(l)["id"] for l in done.stdout.splitlines())
        self.assertEqual(ids, [1, 2, 3, 4, 5])

    def test_no_argument_is_a_usage_error(self) -> None:
        done = self.run_hook([], "")
        self.assertEqual(done.returncode, 2)
        self.assertIn("tiny: usage:", done.stderr)


if __name__ == "__main__":
    unittest.main()
