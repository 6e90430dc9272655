// Preloaded (`node --require`) into every process bench/startup.ts times: as the process exits,
// it writes its peak resident set (VmHWM, kB) and the CPU time of all its threads (user + system,
// ms) to fd 3, a pipe of the benchmark's. Sampling /proc from outside misses most of a 50 ms
// process; this costs the process three syscalls. CPU time, unlike wall time, hardly moves with
// other work on the machine.
const { readFileSync, writeSync } = require('node:fs');

process.on('exit', () => {
  const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
  const cpu = process.cpuUsage();
  writeSync(3, m ? `${m[1]} ${(cpu.user + cpu.system) / 1000}` : '');
});
