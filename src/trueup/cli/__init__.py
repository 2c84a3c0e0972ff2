"""The command line: arguments in, engine calls, human or JSON rendering out."""
