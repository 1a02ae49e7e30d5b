import type { Catalog } from '../../catalog/catalog.js';
import type { ChangeBus } from '../../platform/change-bus.js';
import type { Clock } from '../../platform/clock.js';
import type { Storage } from '../../storage/database.js';
import { createWorkspaceAccess } from '../workspaces/workspace-access.js';
import { createWorkspaceRepository } from '../workspaces/workspace-repository.js';
import { createGuardrailAssignmentRepository } from './guardrail-assignment-repository.js';
import { createGuardrailAssignmentService } from './guardrail-assignment-service.js';
import { createGuardrailRepository } from './guardrail-repository.js';
import { createGuardrailRules } from './guardrail-rules.js';
import { createGuardrailService } from './guardrail-service.js';
import { createPatternChecker } from './regex-safety.js';

/**
 * The guardrail and assignment services over one storage, catalogue and change bus. Built by the
 * server (not buildServices): the rules read the catalogue, which only the server builds.
 */
export function createGuardrailServices(options: {
  storage: Storage;
  catalog: Catalog;
  bus: ChangeBus;
  clock: Clock;
}) {
  const { storage, catalog, bus, clock } = options;
  const access = createWorkspaceAccess(createWorkspaceRepository(storage));
  const guardrails = createGuardrailService({
    guardrails: createGuardrailRepository(storage),
    rules: createGuardrailRules(catalog),
    patterns: createPatternChecker(),
    access,
    bus,
    clock,
  });
  const assignments = createGuardrailAssignmentService({
    guardrails,
    assignments: createGuardrailAssignmentRepository(storage),
    access,
    bus,
    clock,
  });
  return { guardrails, assignments };
}

export type GuardrailServices = ReturnType<typeof createGuardrailServices>;
