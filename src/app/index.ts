import type { Context, Probot } from 'probot';
import { issueSlug } from '../queue/attempts.js';
import type { z } from 'zod';
import { onCiCompleted } from './ciFix.js';
import {
  CheckRunCompleted,
  CheckSuiteCompleted,
  fromCheckRun,
  fromCheckSuite,
  fromStatus,
  fromWorkflowRun,
  StatusEvent,
  WorkflowRunCompleted,
  type CiEvent,
} from './ciPayloads.js';
import { parseCommand } from './commands.js';
import { handlerDeps, type AppDeps, type AppOctokit, type Delivery, type Log } from './deps.js';
import { handleReviewFollowUp } from './followUp.js';
import { onIssueCommand } from './issueCommands.js';
import { issueKey } from './jobData.js';
import { isTriggerLabel, onLabeled } from './label.js';
import {
  IssueCommentCreatedPayload,
  IssueLabeledPayload,
  isBot,
  parsePayload,
  ReviewSubmittedPayload,
} from './payloads.js';

export { DEFAULT_LABEL, labelFromEnv, type AppDeps } from './deps.js';

/**
 * The Probot application: label and comment triggers, and reviews that ask for a follow-up round. Each handler
 * filters the event, then makes one call into the file of its concern (see src/app/README.md).
 */
export function createFrognanoApp(appDeps: AppDeps) {
  const deps = handlerDeps(appDeps);

  return (app: Probot): void => {
    app.on('issues.labeled', async (context) => {
      const p = parsePayload(IssueLabeledPayload, context.payload, app.log, context.id, 'issues.labeled');
      if (!p || !isTriggerLabel(p, deps.label)) return;
      const issue = `${p.repository.owner.login}/${p.repository.name}#${p.issue.number}`;
      const log = app.log.child({ delivery: context.id, issue });
      const decision = await onLabeled(deps, delivery(context, log), p);
      if (decision.action === 'ignored') log.info(`ignoring ${decision.why}`);
    });

    // A review on the bot's pull request that contains /frognano asks for a follow-up round (src/app/followUp.ts).
    app.on('pull_request_review.submitted', async (context) => {
      const event = 'pull_request_review.submitted';
      const p = parsePayload(ReviewSubmittedPayload, context.payload, app.log, context.id, event);
      if (!p) return;
      const pr = `${p.repository.owner.login}/${p.repository.name}#${p.pull_request.number}`;
      const log = app.log.child({ delivery: context.id, pr });
      const decision = await handleReviewFollowUp(deps, delivery(context, log), p);
      if (decision.action === 'ignored') log.debug({ why: decision.why }, 'review: no follow-up');
      else log.info({ decision }, 'review: follow-up');
    });

    // CI finished on a commit: a failure on the head of the bot's own pull request may start a CI-fix round.
    const onCi = (name: string, event: CiEvent | null, context: Context) => {
      if (!event) return;
      const log = app.log.child({ delivery: context.id, event: name, sha: event.headSha.slice(0, 12) });
      return onCiCompleted(deps, delivery(context, log), event).then((decision) =>
        decision.action === 'ignored'
          ? log.debug({ why: decision.why }, 'ci: no round')
          : log.info({ decision }, 'ci: round'),
      );
    };
    const ci = <T>(schema: z.ZodType<T>, context: Context, name: string, normalize: (p: T) => CiEvent | null) => {
      const p = parsePayload(schema, context.payload, app.log, context.id, name);
      return onCi(name, p ? normalize(p) : null, context);
    };
    app.on('check_suite.completed', (c) => ci(CheckSuiteCompleted, c, 'check_suite.completed', fromCheckSuite));
    app.on('check_run.completed', (c) => ci(CheckRunCompleted, c, 'check_run.completed', fromCheckRun));
    app.on('workflow_run.completed', (c) => ci(WorkflowRunCompleted, c, 'workflow_run.completed', fromWorkflowRun));
    app.on('status', (c) => ci(StatusEvent, c, 'status', fromStatus));

    app.on('issue_comment.created', async (context) => {
      const p = parsePayload(IssueCommentCreatedPayload, context.payload, app.log, context.id, 'issue_comment.created');
      if (!p) return;
      if (isBot(p.comment.user) || isBot(p.sender)) return; // includes our own comments
      const command = parseCommand(p.comment.body);
      if (!command) return;
      const key = issueKey(p);
      const log = app.log.child({ delivery: context.id, issue: issueSlug(key), command: command.kind });
      await onIssueCommand(deps, delivery(context, log), { p, key, command });
    });
  };
}

/** The delivery as handlers see it: Probot's client narrowed to what src/github takes. */
function delivery(context: Context, log: Log): Delivery {
  return { id: context.id, octokit: context.octokit as unknown as AppOctokit, log };
}

export default createFrognanoApp;
