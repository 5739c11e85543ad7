import { addCommentReaction, postComment } from '../github/comments.js';
import { getUserPermission } from '../github/permissions.js';
import { notBotPullRequestReason } from '../github/pullRequest.js';
import { fetchPullRequest, type PullRequestSlice } from '../github/pullRequestFetch.js';
import { issueSlug, type IssueKey } from '../queue/attempts.js';
import { claimOnce, HANDLED_TTL_SECONDS } from '../queue/lock.js';
import { cancelAttempt, replyStatus, startRetry } from './attemptCommands.js';
import type { Command } from './commands.js';
import type { Delivery, HandlerDeps } from './deps.js';
import { onPullRequestCommand } from './followUp.js';
import { guidanceFrom, isGuidanceRequest } from './guidance.js';
import * as msg from './messages.js';
import { refuseOutsider } from './outsiders.js';
import { isPullRequest, type IssueCommentCreatedPayload } from './payloads.js';
import { botKey } from '../queue/keys.js';

/** A `/frognano …` comment by a person, on an issue or on a pull request. */
export interface CommandComment {
  p: IssueCommentCreatedPayload;
  key: IssueKey;
  command: Command;
}

type IssueCommandHandler = (deps: HandlerDeps, d: Delivery, c: CommandComment) => Promise<void>;

/** What each command does on an issue. */
const ISSUE_COMMANDS: Record<Command['kind'], IssueCommandHandler> = {
  // `/frognano <what to do>` on an issue: an attempt with the writer's guidance (busy if one is running).
  help: async (deps, d, { p, key, command }) => {
    if (isGuidanceRequest(command, p.comment.body)) return startRetry(deps, d, p, key, guidanceFrom(p.comment.body));
    await postComment(d.octokit, key, msg.helpText(deps.label, command.kind === 'help' ? command.unknown : undefined));
  },
  status: (deps, d, { p, key }) => replyStatus(deps, d, key, p.issue.html_url, p.comment.user.login),
  retry: (deps, d, { p, key }) => startRetry(deps, d, p, key, guidanceFrom(p.comment.body)),
  cancel: (deps, d, { p, key }) => cancelAttempt(deps, d, key, p.issue.html_url, p.comment.user.login),
};

/**
 * `issue_comment.created` with a `/frognano` command. Each comment is handled once: a redelivery does
 * nothing, and a failure lets GitHub's redelivery try again.
 */
export async function onIssueCommand(deps: HandlerDeps, d: Delivery, c: CommandComment): Promise<void> {
  const claimKey = botKey('comment', issueSlug(c.key), String(c.p.comment.id));
  if (!(await claimOnce(deps.redis, claimKey, HANDLED_TTL_SECONDS))) {
    return void d.log.info('comment already handled (redelivery)');
  }
  try {
    await handleCommand(deps, d, c);
  } catch (err) {
    await deps.redis.del(claimKey); // let GitHub's redelivery try again
    throw err;
  }
}

async function handleCommand(deps: HandlerDeps, d: Delivery, c: CommandComment): Promise<void> {
  const { p, key } = c;
  const user = p.comment.user.login;
  let pr: PullRequestSlice | undefined;
  if (isPullRequest(p.issue)) {
    // Anyone can comment on any pull request: only frognano's own are worth an answer.
    pr = await fetchPullRequest(d.octokit, key.owner, key.repo, key.issueNumber);
    const notOurs = notBotPullRequestReason(pr);
    if (notOurs) return void d.log.info(`ignoring a command on a pull request: ${notOurs}`);
  }
  const perm = await getUserPermission(d.octokit, key.owner, key.repo, user);
  if (!perm.allowed) {
    const text = msg.refusalText(user, perm.role, 'command', deps.label);
    return refuseOutsider(deps.redis, d.octokit, key, text, d.log.child({ user, role: perm.role }));
  }
  await addCommentReaction(d.octokit, { owner: key.owner, repo: key.repo, commentId: p.comment.id }, 'eyes').catch(
    (err: unknown) => d.log.warn({ err }, 'could not add the eyes reaction'),
  );
  if (pr) return onPullRequestCommand(deps, d, { p, key, pr });
  await ISSUE_COMMANDS[c.command.kind](deps, d, c);
}
