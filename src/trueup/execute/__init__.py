"""Gates, the executor, the journal, rollback and recovery."""
