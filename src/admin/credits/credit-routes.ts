import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import type { CreditLedger } from '../../billing/credit-ledger.js';
import { nanosToUsd } from '../../billing/money.js';
import { ErrorSchema } from '../../errors/error-schema.js';

/** `GET /credits` (spec 2.13, 4.14): total granted and total used, in USD. */
export const creditRoutes =
  (ledger: CreditLedger): FastifyPluginAsync =>
  async (plugin) => {
    const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/credits',
      {
        config: { auth: 'management' },
        schema: {
          tags: ['Credits'],
          summary: 'Total credits granted to the account and total used',
          response: {
            200: Type.Object({
              data: Type.Object({ total_credits: Type.Number(), total_usage: Type.Number() }),
            }),
            401: ErrorSchema,
            403: ErrorSchema,
          },
        },
      },
      async () => {
        const totals = await ledger.totals();
        return {
          data: { total_credits: nanosToUsd(totals.grantedNanos), total_usage: nanosToUsd(totals.usedNanos) },
        };
      },
    );
  };
