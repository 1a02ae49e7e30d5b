// How long each of the gateway's threads waited for a CPU, per request: a preload for the gateway
// under a bench's load. It counts requests (Node's `http.server.request.start` channel) and reads
// every thread's scheduler statistics (`/proc/self/task/<tid>/schedstat`: time run, time spent
// runnable on a run queue, time slices; `status`: voluntary and involuntary context switches) at
// request `start` and at request `start + count`, then writes each thread's differences, in µs per
// request, to /tmp/run-queue-wait-<pid>.txt. On a pinned core, the request thread's wait is what
// the gateway's other threads (the commit thread, the broadcast worker thread, V8's helpers) cost
// the requests in scheduling, apart from what they cost in caches.
// Linux only (schedstat needs CONFIG_SCHED_INFO, which distributions enable).
//
// For experiments it can also change the threads' scheduling when the window opens, by their nice
// value (the request thread 0, V8's helpers `helper_thread_niceness`, the commit thread 0, the
// broadcast worker thread 19 once it lowered itself):
//   start   requests before the window (default 3000; warm-up requests count)
//   count   requests in the window (default 4000)
//   worker  `idle` or `batch`: the nice-19 threads' policy (util-linux chrt)
//   sqlite  `idle`, `batch` or `normal`: the broadcast worker's SQLite thread's alone (the nice-19
//           thread of the normal policy), instead of `worker`'s
//   commit  `idle` or `batch`: the other nice-0 threads' policy
//   helper  `idle` or `batch`: the remaining threads' policy
//   slice   the request thread's EEVDF slice in ns (Linux 6.12+; sched_setattr through perl, as
//           Node has no binding and util-linux 2.38's chrt cannot set it)
//
// Usage: BENCH_GATEWAY_NODE_ARGS="--import file://$PWD/bench/run-queue-wait.mjs?start=3000&count=4000" \
//          node --import tsx bench/inference.ts --only steady --broadcast webhook,otel-collector,langfuse \
//          --warmup 10 --duration 25
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { isMainThread } from 'node:worker_threads';
import { onRequestWindow, settingsOf } from './request-window.mjs';

const query = new URL(import.meta.url).searchParams;
const settings = settingsOf(import.meta.url, 'run-queue-wait');
const start = settings.count('start', 3_000, 1);
const count = settings.count('count', 4_000, 1);

/** sched_setattr and sched_getattr by architecture; the slice is `sched_runtime` (Linux 6.12+). */
const SET_SLICE = `
use POSIX ();
my ($tid, $ns) = map { $_ + 0 } @ARGV;
my %nr = (x86_64 => [314, 315], aarch64 => [274, 275]);
my ($set, $get) = @{ $nr{(POSIX::uname())[4]} or die "unknown architecture\\n" };
my $attr = "\\0" x 56;
syscall($get, $tid, $attr, 56, 0) == 0 or die "sched_getattr: $!\\n";
my ($size, $policy, $flags, $nice, $priority) = unpack("L L Q l L", $attr);
$attr = pack("L L Q l L Q Q Q L L", 56, $policy, 0, $nice, $priority, $ns, 0, 0, 0, 0);
syscall($set, $tid, $attr, 0) == 0 or die "sched_setattr: $!\\n";
`;

function policyOf(tid) {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
}

/** Applies the query's scheduling changes; returns a line per thread saying what it is now. */
function reschedule() {
  const lines = [];
  const slice = query.get('slice');
  if (slice) execFileSync('perl', ['-e', SET_SLICE, String(process.pid), slice], { stdio: 'ignore' });
  for (const tid of readdirSync('/proc/self/task')) {
    if (tid === String(process.pid)) continue;
    const nice = getPriority(Number(tid));
    const role = nice === 19 ? 'worker' : nice === 0 ? 'commit' : 'helper';
    const ownSqlite = role === 'worker' && policyOf(tid) === 0 && query.has('sqlite');
    const policy = ownSqlite ? query.get('sqlite') : query.get(role);
    try {
      if (policy === 'idle' || policy === 'batch') execFileSync('chrt', [`--${policy}`, '--pid', '0', tid]);
    } catch (error) {
      lines.push(`${tid} not changed: ${error.message}`);
    }
    lines.push(`${tid} (${ownSqlite ? 'sqlite' : role}) nice ${nice} policy ${policyOf(tid)}`);
  }
  return lines;
}

function snapshot() {
  const threads = new Map();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const [run, wait, slices] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8')
        .trim()
        .split(' ')
        .map(Number);
      const status = readFileSync(`/proc/self/task/${tid}/status`, 'utf8');
      const switches = (name) => Number(status.match(new RegExp(`^${name}:\\s*(\\d+)`, 'm'))?.[1] ?? 0);
      threads.set(tid, {
        run,
        wait,
        slices,
        voluntary: switches('voluntary_ctxt_switches'),
        involuntary: switches('nonvoluntary_ctxt_switches'),
      });
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return threads;
}

if (isMainThread) {
  let before = new Map();
  let changes = [];
  onRequestWindow(
    start,
    count,
    () => {
      changes = reschedule();
      before = snapshot();
    },
    () => {
      const after = snapshot();
      const lines = [`${count} requests; per request: time run, time runnable but waiting, slices, switches`];
      for (const [tid, now] of after) {
        const then = before.get(tid) ?? { run: 0, wait: 0, slices: 0, voluntary: 0, involuntary: 0 };
        const per = (key, scale = 1) => (now[key] - then[key]) / scale / count;
        if (per('run', 1_000) < 1) continue;
        lines.push(
          `${tid === String(process.pid) ? 'request thread' : tid}: run ${per('run', 1_000).toFixed(1)} µs, ` +
            `waited ${per('wait', 1_000).toFixed(1)} µs, slices ${per('slices').toFixed(2)}, ` +
            `voluntary ${per('voluntary').toFixed(2)}, involuntary ${per('involuntary').toFixed(3)}`,
        );
      }
      writeFileSync(`/tmp/run-queue-wait-${process.pid}.txt`, `${[...lines, ...changes].join('\n')}\n`);
    },
  );
}
