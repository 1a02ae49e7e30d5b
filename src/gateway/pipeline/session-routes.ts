/** How long a session keeps its endpoint without traffic. */
const SESSION_TTL_MS = 30 * 60_000;
const MAX_SESSIONS = 100_000;

/**
 * Sticky routing (`session_id`): the endpoint that last served a session, so its follow-up
 * requests land where the provider's prompt cache is warm. Bounded: the oldest sessions go first.
 */
export function createSessionRoutes(options: { now: () => number }) {
  const routes = new Map<string, { endpointId: string; at: number }>();
  return {
    get(session: string): string | null {
      const entry = routes.get(session);
      if (!entry) return null;
      if (options.now() - entry.at > SESSION_TTL_MS) {
        routes.delete(session);
        return null;
      }
      return entry.endpointId;
    },
    set(session: string, endpointId: string): void {
      // Re-inserting moves the session to the young end of the map's order.
      routes.delete(session);
      if (routes.size >= MAX_SESSIONS) routes.delete(routes.keys().next().value as string);
      routes.set(session, { endpointId, at: options.now() });
    },
  };
}

export type SessionRoutes = ReturnType<typeof createSessionRoutes>;
