"""The learner's files in `solutions/` import one another by name, as a learner's folder does;
they are loaded by `practice.load_file`, never collected as test modules."""

collect_ignore = ["solutions"]
