"""Who may call and what they may reach: bearer tokens and identities (authenticators), the
policy file's grants, the per-call gate in front of every handler, and the audit log."""
