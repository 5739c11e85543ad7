/**
 * `Co-authored-by:` trailer for the person who triggered a run, with GitHub's noreply address so the
 * commit is attributed to their account without exposing a real address. With the user id the address
 * is `<id>+<login>@users.noreply.github.com` (GitHub's current form); without, the older `<login>@...`.
 */
export function coAuthorTrailer(user: { login: string; id?: number }): string | null {
  const login = user.login.trim();
  // GitHub logins: alphanumerics and single hyphens. Anything else is not a person we can attribute to.
  if (!/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/.test(login)) return null;
  const email = user.id ? `${user.id}+${login}@users.noreply.github.com` : `${login}@users.noreply.github.com`;
  return `Co-authored-by: ${login} <${email}>`;
}

/** Appends the trailer after a blank line (git reads trailers from the last paragraph). */
export function withCoAuthor(message: string, user: { login: string; id?: number }): string {
  const trailer = coAuthorTrailer(user);
  if (!trailer) return message;
  return `${message.trimEnd()}\n\n${trailer}\n`;
}

/** One trailer per distinct person (a round that merged several writers' asks), in one trailer paragraph. */
export function withCoAuthors(message: string, users: { login: string; id?: number }[]): string {
  const trailers = [...new Set(users.map(coAuthorTrailer).filter((t): t is string => t !== null))];
  if (trailers.length === 0) return message;
  return `${message.trimEnd()}\n\n${trailers.join('\n')}\n`;
}
