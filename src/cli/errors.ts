/** A mistake the user can fix (bad flag, unreadable file): printed as one line, exit 1, no stack. */
export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
