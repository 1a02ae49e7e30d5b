// What the measuring preloads (heap-sampling.mjs, cpu-profile.mjs) share: their settings, read from
// the query of the URL they were imported by (the bench starts the gateway with a clean environment),
// and a window of requests, counted on Node's `http.server.request.start` channel, that begins after
// `start` requests and ends `count` requests later.
import diagnostics from 'node:diagnostics_channel';

/** Kept alive here: a channel only weakly held can be collected with its subscriber. */
const channels = [];

/** A reader of `url`'s query settings as whole numbers, each at least `least`. */
export function settingsOf(url, tool) {
  const query = new URL(url).searchParams;
  return {
    count(name, fallback, least = 0) {
      const value = Number(query.get(name) ?? fallback);
      if (!Number.isSafeInteger(value) || value < least)
        throw new Error(`${tool}: ${name} must be a whole number of at least ${least}, got ${value}`);
      return value;
    },
    flag: (name) => query.get(name) === '1',
  };
}

/** Runs `open` when request `start` arrives and `close` when request `start + count` does, once each. */
export function onRequestWindow(start, count, open, close) {
  let requests = 0;
  let state = 'waiting';
  const channel = diagnostics.channel('http.server.request.start');
  channel.subscribe(() => {
    requests += 1;
    if (state === 'waiting' && requests >= start) {
      state = 'open';
      open();
    } else if (state === 'open' && requests >= start + count) {
      state = 'done';
      close();
    }
  });
  channels.push(channel);
}
