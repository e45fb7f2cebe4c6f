#!/usr/bin/env python3
# This registry mirror lacks some optional platform packages (404), so `npm install` leaves them
# out of package-lock.json and `npm ci` then refuses the lock. Adds the missing optional
# platform entries (never installed on linux-x64) so that `npm ci` accepts the lock.
import json, sys
p = sys.argv[1] if len(sys.argv) > 1 else 'package-lock.json'
lock = json.load(open(p))
pk = lock['packages']
added = []
for name, meta in list(pk.items()):
    for dep, ver in (meta.get('optionalDependencies') or {}).items():
        key = 'node_modules/' + dep
        if key in pk or (name and (name + '/node_modules/' + dep) in pk):
            continue
        plat = dep.rsplit('-', 2)
        os_, cpu = (plat[-2], plat[-1]) if len(plat) >= 3 else (None, None)
        entry = {'version': ver, 'optional': True, 'license': meta.get('license', 'MIT')}
        if os_ in ('darwin', 'linux', 'win32', 'freebsd', 'android', 'openbsd', 'sunos', 'aix', 'netbsd'):
            entry['os'] = [os_]
        if cpu in ('arm64', 'x64', 'arm', 'ia32', 'ppc64', 's390x', 'riscv64', 'loong64', 'mips64el', 'ppc'):
            entry['cpu'] = [cpu]
        pk[key] = entry
        added.append(dep)
lock['packages'] = dict(sorted(pk.items(), key=lambda kv: (kv[0] != '', kv[0])))
json.dump(lock, open(p, 'w'), indent=2)
open(p, 'a').write('\n')
print('added', added)
