"""The state store: runs, journal, applied records, drift, the stat cache."""
