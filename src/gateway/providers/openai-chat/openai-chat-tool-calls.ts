import type { StreamPart } from '../../../spec/stream-part.js';
import type { OpenAiToolCallDelta } from './openai-chat-api.js';

type ToolCallPart = Extract<StreamPart, { type: 'tool-call-start' | 'tool-call-delta' | 'tool-call-end' }>;

interface Call {
  /** Ours: 0, 1, … in the order the calls began upstream. */
  index: number;
  id: string;
  /** Whether `id` is the upstream's own rather than a made-up `call_<index>`. */
  ownId: boolean;
  name: string;
  /** Whether its first delta carried a name (perhaps only the name's first piece). */
  namedFirst: boolean;
  /** Whether its `tool-call-start` went out. */
  started: boolean;
  /** Arguments that came before its name, sent after the start. */
  held: string;
  ended: boolean;
}

/**
 * The tool calls of an OpenAI-compatible stream, read delta by delta into canonical parts.
 *
 * A call is matched to the one open under its upstream index; a new id under an index in use is a
 * new call (Ollama sends every call as index 0, some servers send no index at all, read as the
 * position in the chunk).
 *
 * A call is held until its name is whole, so that its start carries the whole name: some servers
 * send the id first and the name in a later delta, some the name in pieces (the first piece perhaps
 * with the id), some the arguments before the name. Name pieces are joined until the call's
 * argument text begins, and it starts then; OpenAI's own form (id and whole name in the first
 * delta, `arguments: ""`, then the argument pieces) so starts with its first argument piece, or at
 * once when its name is one of the request's tools (`declared`) that begins no other: a server that
 * buffers a long argument text does not hold the call's start (nor its first-token timer) for it.
 * Arguments that came before any name wait with it until the name comes. A call still held when
 * another call begins, when the upstream gives its finish reason, or when the stream ends starts
 * with what is known. A later delta that repeats the whole name (MiniMax through NVIDIA NIM sends
 * it on every chunk) adds nothing.
 */
/**
 * The names that begin no other name of the list. Sorted, a name that begins others is followed
 * by one of them, so one pass over neighbours finds them (linear after the sort, however many tools).
 */
function wholeNames(declared: readonly string[]): Set<string> {
  const sorted = [...new Set(declared)].sort();
  const whole = new Set<string>();
  for (let at = 0; at < sorted.length; at += 1) {
    const name = sorted[at] as string;
    const next = sorted[at + 1];
    if (name !== '' && (next === undefined || !next.startsWith(name))) whole.add(name);
  }
  return whole;
}

export function createToolCallReader(declared: readonly string[] = []) {
  const calls: Call[] = [];
  // A name that is one of the request's tools and begins none of the others is whole: its call
  // starts at once, without waiting for its first argument piece.
  const whole = wholeNames(declared);
  const upstreamIndexes = new Map<number, number>();
  /** Calls before this one have all started: a stream of many calls is read in linear time. */
  let firstUnstarted = 0;
  const startEarlier = (out: ToolCallPart[]): void => {
    for (; firstUnstarted < calls.length; firstUnstarted += 1) {
      const earlier = calls[firstUnstarted] as Call;
      if (!earlier.started) start(earlier, out);
    }
  };

  const start = (call: Call, out: ToolCallPart[]): void => {
    call.started = true;
    out.push({ type: 'tool-call-start', index: call.index, callId: call.id, name: call.name });
    if (call.held) out.push({ type: 'tool-call-delta', index: call.index, argumentsDelta: call.held });
    call.held = '';
  };

  return {
    /** The parts one upstream tool-call delta makes; none while its call is held. */
    read(delta: OpenAiToolCallDelta): ToolCallPart[] {
      const out: ToolCallPart[] = [];
      const known = upstreamIndexes.get(delta.index);
      let call = known === undefined ? undefined : calls[known];
      // A new call under an index in use names itself (id and function name); a server that varies
      // the id of one call's continuation chunks sends no name with them. After a call that came
      // without an id, a delta with an id and another name is a new call (one that repeats the
      // name on every chunk, with an id arriving late, is the same call).
      const takesOver =
        call !== undefined &&
        delta.id !== undefined &&
        delta.name !== undefined &&
        (call.ownId ? delta.id !== call.id : (call.started || call.namedFirst) && delta.name !== call.name);
      if (call === undefined || takesOver) {
        // The calls before it start now, in order. The one it takes the index from can get no more
        // arguments: it ends now, so a client is not kept waiting for its end until the stream's.
        startEarlier(out);
        if (takesOver && call) {
          call.ended = true;
          out.push({ type: 'tool-call-end', index: call.index });
        }
        const index = calls.length;
        call = {
          index,
          id: delta.id ?? `call_${index}`,
          ownId: delta.id !== undefined,
          name: delta.name ?? '',
          namedFirst: Boolean(delta.name),
          started: false,
          held: '',
          ended: false,
        };
        calls.push(call);
        upstreamIndexes.set(delta.index, index);
        // Without its own id yet, it waits for its arguments: the id may still come.
        if (call.ownId && whole.has(call.name)) start(call, out);
      } else if (!call.started) {
        if (delta.id !== undefined && !call.ownId) {
          call.id = delta.id;
          call.ownId = true;
        }
        if (delta.name && delta.name !== call.name) call.name += delta.name;
        // Arguments that came first were waiting for the name: once it comes it is the whole name.
        if ((call.held && call.name) || (call.ownId && whole.has(call.name))) start(call, out);
      }
      if (delta.arguments) {
        if (call.started) {
          out.push({ type: 'tool-call-delta', index: call.index, argumentsDelta: delta.arguments });
        } else {
          call.held += delta.arguments;
          if (call.name) start(call, out);
        }
      }
      return out;
    },

    /** When the upstream gives its finish reason: no more of a name can come, so held calls start. */
    finish(): ToolCallPart[] {
      const out: ToolCallPart[] = [];
      startEarlier(out);
      return out;
    },

    /** At the end of the stream: held calls start with what is known, and every call ends. */
    end(): ToolCallPart[] {
      const out: ToolCallPart[] = [];
      startEarlier(out);
      for (const call of calls) if (!call.ended) out.push({ type: 'tool-call-end', index: call.index });
      return out;
    },
  };
}
