// The one type of a mistake the user can fix: a bad flag, setting, file or declaration.
// The CLI prints it as one line (`annex: <message>`) with its exit code, never a stack;
// `serve()` callers get it thrown. Everything else that fails is a bug or the API server's
// answer (KubeApiError), not this.

export class UserError extends Error {
  override name = 'UserError';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
