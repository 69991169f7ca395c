/** Bad arguments (exit status 2); printed with the command's usage hint. */
export class UsageError extends Error {
  readonly code = 'invalid_usage';
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
