// The deployment files of native/server/deploy/: the systemd unit passes
// `systemd-analyze verify` without a warning and keeps its sandbox, and the nginx
// config scripts/fleet.sh renders passes `nginx -t`. Each check skips, saying so, where
// its tool is not installed (scripts/setup.sh --tests installs both).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { binary } from './lib/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const deploy = path.join(root, 'native/server/deploy');
// Debian's nginx is in /usr/sbin, off a normal user's PATH.
const which = (tool) => spawnSync('sh', ['-c', `command -v ${tool} || { test -x /usr/sbin/${tool} && echo /usr/sbin/${tool}; }`],
  { encoding: 'utf8' }).stdout.trim();
const has = (tool) => which(tool) !== '';

test('runnel.service: systemd-analyze verify passes without warnings; the sandbox is on', (t) => {
  if (!has('systemd-analyze')) {
    t.skip('systemd-analyze is not installed (apt-get install systemd)');
    return;
  }
  const unit = readFileSync(path.join(deploy, 'runnel.service'), 'utf8');
  for (const line of ['DynamicUser=yes', 'ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes',
    'NoNewPrivileges=yes', 'BindReadOnlyPaths=/srv/runnel/models:/models', 'KillSignal=SIGTERM']) {
    assert.match(unit, new RegExp(`^${line}$`, 'm'), line);
  }
  assert.match(unit, /^MemoryMax=\d+[KMG]$/m);
  // verify needs ExecStart's binary to exist: point it at the one under test.
  const dir = mkdtempSync(path.join(tmpdir(), 'runnel-unit-'));
  try {
    const file = path.join(dir, 'runnel.service');
    writeFileSync(file, unit.replaceAll('/usr/local/bin/runnel', binary));
    const r = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    // Unknown keys and bad values are only warnings to systemd: any line is a failure.
    assert.equal(r.stderr.trim(), '', r.stderr);
    // The check can fail: a misspelt key is reported.
    writeFileSync(file, unit.replaceAll('/usr/local/bin/runnel', binary).replace('ProtectHome=', 'ProtectHom='));
    assert.match(spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' }).stderr, /Unknown key 'ProtectHom'/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('nginx.conf.in as scripts/fleet.sh renders it: nginx -t accepts it', (t) => {
  if (!has('nginx')) {
    t.skip('nginx is not installed (apt-get install nginx-light)');
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'runnel-nginx-'));
  try {
    for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(path.join(dir, 'tmp', d), { recursive: true });
    const servers = '    server 127.0.0.1:18801 max_fails=1 fail_timeout=5s;\n    server 127.0.0.1:18802 max_fails=1 fail_timeout=5s;';
    const conf = readFileSync(path.join(deploy, 'nginx.conf.in'), 'utf8')
      .replace(/^@SERVERS@$/gm, servers).replaceAll('@PREFIX@', dir).replaceAll('@LISTEN@', '127.0.0.1:18800');
    assert.doesNotMatch(conf, /@[A-Z]+@/);
    writeFileSync(path.join(dir, 'nginx.conf'), conf);
    const r = spawnSync(which('nginx'), ['-t', '-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')],
      { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /syntax is ok/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
