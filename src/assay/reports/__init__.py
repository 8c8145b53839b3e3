"""Roll-ups and renderings: suite.json/md, run.json/md, JUnit XML, progress."""
