import type { DestinationType } from './destination-type.js';
import { arizeDestination } from './exporters/arize.js';
import { braintrustDestination } from './exporters/braintrust.js';
import { clickhouseDestination } from './exporters/clickhouse.js';
import { datadogDestination } from './exporters/datadog.js';
import { grafanaDestination } from './exporters/grafana.js';
import { langfuseDestination } from './exporters/langfuse.js';
import { langsmithDestination } from './exporters/langsmith.js';
import { newrelicDestination } from './exporters/newrelic.js';
import { opikDestination } from './exporters/opik.js';
import { otelCollectorDestination } from './exporters/otel-collector.js';
import { posthogDestination } from './exporters/posthog.js';
import { rampDestination } from './exporters/ramp.js';
import { s3Destination } from './exporters/s3.js';
import { sentryDestination } from './exporters/sentry.js';
import { snowflakeDestination } from './exporters/snowflake.js';
import { weaveDestination } from './exporters/weave.js';
import { webhookDestination } from './exporters/webhook.js';

/** The seventeen stable destination types (reference §3.1), by identifier. */
export const DESTINATION_TYPES: ReadonlyMap<string, DestinationType<object>> = new Map(
  (
    [
      arizeDestination,
      braintrustDestination,
      clickhouseDestination,
      datadogDestination,
      grafanaDestination,
      langfuseDestination,
      langsmithDestination,
      newrelicDestination,
      opikDestination,
      otelCollectorDestination,
      posthogDestination,
      rampDestination,
      s3Destination,
      sentryDestination,
      snowflakeDestination,
      weaveDestination,
      webhookDestination,
    ] as Array<DestinationType<object>>
  ).map((definition) => [definition.type, definition]),
);

export const DESTINATION_TYPE_NAMES: readonly string[] = [...DESTINATION_TYPES.keys()];

export function destinationType(type: string): DestinationType<object> | undefined {
  return DESTINATION_TYPES.get(type);
}
