// The kit's runtime tests on its build (npm test: build, then node --test):
// the provider fault in hello and probe replies (Hook.adminFault),
// readSecretFile, a call's deadline (callOf, timeoutMs) and log's one line.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { setTimeout as sleep } from 'node:timers/promises';

import { HookError, announcedSecrets, callOf, readSecretFile } from '../dist/index.js';

const fixture = fileURLToPath(new URL('./fixture-hook.mjs', import.meta.url));

/** Runs the fixture with `args` and the request lines; its stdout lines, parsed, and its status. */
function run(args, lines, env) {
  const done = spawnSync(process.execPath, [fixture, ...args], {
    input: lines.map((l) => JSON.stringify(l)).join('\n') + '\n',
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return { status: done.status, lines: done.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l)), stderr: done.stderr };
}

function folder(t) {
  const dir = mkdtempSync(join(tmpdir(), 'kit-ts-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const hello = (id) => ({ v: 1, id, verb: 'hello', deadline_ms: 5000 });
const probe = (id, fault) => ({ v: 1, id, verb: 'probe', fault, deadline_ms: 5000 });

test('hello and probe say the provider fault, and null once it is gone', (t) => {
  const dir = folder(t);
  const admin = join(dir, 'admin');
  const down = join(dir, 'down');
  writeFileSync(admin, 'adm1n-pw\n');
  writeFileSync(down, '');
  const env = { FIXTURE_ADMIN_FILE: admin, FIXTURE_FAULT: down };
  const said = { class: 'credentials-rejected', error: 'WRONGPASS for mesh-admin ([redacted])' };
  const served = run(['serve'], [hello(1), probe(2, 'disk-full'), probe(3, 'gone')], env);
  const announced = served.lines.findIndex((l) => !('id' in l));
  assert.deepEqual(served.lines[announced], { secrets: ['adm1n-pw'] });
  assert.ok(announced < served.lines.findIndex((l) => l.id === 1), 'the password announced before the hello that read it');
  const byId = new Map(served.lines.filter((l) => 'id' in l).map((l) => [l.id, l]));
  assert.deepEqual(byId.get(1).fault, said);
  assert.equal(byId.get(1).ok, undefined);
  assert.deepEqual([byId.get(2).ok, byId.get(2).fault], [true, said]);
  assert.deepEqual([byId.get(3).ok, 'fault' in byId.get(3)], [false, false], 'a failed probe says no fault');
  const execed = run(['hello'], [hello(1)], env);
  assert.deepEqual([execed.status, execed.lines[0].fault], [0, said]);
  rmSync(down);
  const cleared = run(['serve'], [hello(4), probe(5, 'disk-full')], env);
  assert.deepEqual(cleared.lines.filter((l) => 'id' in l).map((l) => l.fault), [null, null]);
});

test('a hello whose secret file cannot be read fails secret-unreadable, naming file and variable', (t) => {
  const missing = join(folder(t), 'missing');
  const out = run(['hello'], [hello(1)], { FIXTURE_ADMIN_FILE: missing });
  assert.equal(out.status, 1);
  assert.equal(out.lines[0].class, 'secret-unreadable');
  assert.match(out.lines[0].error, /FIXTURE_ADMIN_FILE/);
  assert.ok(out.lines[0].error.includes(missing), out.lines[0].error);
});

test('readSecretFile trims, announces, and reads a rotation again', async (t) => {
  const dir = folder(t);
  const file = join(dir, 'admin');
  writeFileSync(file, '  first-pw \n');
  assert.equal(await readSecretFile('T_ADMIN_FILE', { T_ADMIN_FILE: file }), 'first-pw');
  assert.deepEqual(announcedSecrets(), ['first-pw']);
  writeFileSync(file, 'second-pw\r\n');
  assert.equal(await readSecretFile('T_ADMIN_FILE', { T_ADMIN_FILE: file }), 'second-pw');
  assert.deepEqual(announcedSecrets(), ['second-pw']);
  const other = join(dir, 'other');
  writeFileSync(other, 'other-pw');
  await readSecretFile('T_OTHER_FILE', { T_OTHER_FILE: other });
  assert.deepEqual(announcedSecrets(), ['other-pw', 'second-pw'], "two files' secrets, both announced");
});

test('readSecretFile fails secret-unreadable naming the file and the variable, never the content', async (t) => {
  const dir = folder(t);
  const empty = join(dir, 'empty');
  writeFileSync(empty, ' \n\t\n');
  const before = [...announcedSecrets()];
  for (const [path, words] of [
    [join(dir, 'missing'), 'ENOENT'],
    [empty, 'is empty'],
    [dir, 'EISDIR'],
  ]) {
    await assert.rejects(readSecretFile('T_ADMIN_FILE', { T_ADMIN_FILE: path }), (error) => {
      assert.ok(error instanceof HookError);
      assert.equal(error.class, 'secret-unreadable');
      for (const part of [path, 'T_ADMIN_FILE', words]) assert.ok(error.message.includes(part), error.message);
      return true;
    });
  }
  await assert.rejects(readSecretFile('T_ADMIN_FILE', {}), /T_ADMIN_FILE is not set/);
  assert.deepEqual(announcedSecrets(), before, 'nothing announced');
});

test("callOf: the request's deadline, timeoutMs at most its cap and at least 1, the request's provider", async () => {
  const call = callOf({ id: 7, deadline_ms: 5000, provider: 'redis@cache-1' });
  assert.deepEqual([call.id, call.deadlineMs, call.provider], [7, 5000, 'redis@cache-1']);
  assert.equal(call.timeoutMs(1000), 1000, 'capped');
  const left = call.timeoutMs();
  assert.ok(left > 4000 && left <= 5000 && Number.isInteger(left), `${left} ms left of 5000`);
  const short = callOf({ id: 8, deadline_ms: 1 });
  await sleep(20);
  assert.equal(short.remainingMs(), 0);
  assert.equal(short.timeoutMs(), 1, 'a wait past the deadline is given 1 ms, not 0 (for ever to some clients)');
  assert.equal(short.timeoutMs(0), 1);
  assert.ok(short.signal.aborted, 'the signal is aborted at the deadline');
});

test('callOf without a deadline or provider: MESH_HOOK_TIMEOUT_MS, else 30 s; MESH_PROVIDER, else nothing', (t) => {
  const saved = { timeout: process.env.MESH_HOOK_TIMEOUT_MS, provider: process.env.MESH_PROVIDER };
  t.after(() => {
    for (const [key, value] of [['MESH_HOOK_TIMEOUT_MS', saved.timeout], ['MESH_PROVIDER', saved.provider]]) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });
  delete process.env.MESH_HOOK_TIMEOUT_MS;
  delete process.env.MESH_PROVIDER;
  assert.deepEqual([callOf({ id: 1 }).deadlineMs, callOf({ id: 1 }).provider], [30_000, '']);
  process.env.MESH_HOOK_TIMEOUT_MS = '2500';
  process.env.MESH_PROVIDER = 'redis@cache-2';
  const call = callOf({ id: 2, deadline_ms: 0, provider: '' });
  assert.deepEqual([call.deadlineMs, call.provider], [2500, 'redis@cache-2']);
});

test("a handler's call bounds its waits (timeoutMs), and log writes one line for a message of two", () => {
  const repair = { v: 1, id: 1, verb: 'repair', fault: 'disk-full', deadline_ms: 5000, provider: 'x@m-1' };
  const out = run(['serve'], [repair], {});
  assert.deepEqual(out.lines, [{ id: 1, ok: true, detail: '1000' }]);
  assert.equal(out.stderr, 'fixture: repairing disk-full for x@m-1\n');
});

test('a request without what its verb needs is refused before any handler, naming what it lacks', () => {
  const base = { v: 1, deadline_ms: 5000 };
  const asked = [
    { ...base, id: 1, verb: 'ensure', consumer: { name: 'forge' } },
    { ...base, id: 2, verb: 'check', consumer: {}, secret: 'pw-0123' },
    { ...base, id: 3, verb: 'retire', consumer: '' },
    { ...base, id: 4, verb: 'repair' },
    { ...base, id: 5, verb: 'by-hand', action: 'make', consumer: 'forge' },
    { ...base, id: 6, verb: 'by-hand', action: 'reach', consumer: 'forge', secret: 'pw-0123' },
    { ...base, id: 7, verb: 'by-hand', consumer: 'forge' },
    // Well formed: the fixture has no ensure handler, nor by-hand change.
    { ...base, id: 8, verb: 'ensure', consumer: { name: 'forge' }, secret: 'pw-0123' },
    { ...base, id: 9, verb: 'by-hand', action: 'change', consumer: 'forge' },
  ];
  const out = run(['serve'], asked, {});
  const byId = new Map(out.lines.map((l) => [l.id, l]));
  const refused = (error) => ({ ok: false, class: 'refused', error });
  assert.deepEqual(
    asked.map((r) => { const { id, ...rest } = byId.get(r.id); return rest; }),
    [
      refused("the request's secret is not a string"),
      refused("the request's consumer has no name"),
      refused("the request's consumer is not a string"),
      refused("the request's fault is not a string"),
      refused("the request's secret is not a string"),
      refused("the request's target is not a string"),
      refused("the request's action is not a string"),
      { unsupported: true },
      { unsupported: true },
    ],
  );
});
