"""Evaluation: how well the whole system cites, over named sets of questions (docs/evaluation.md).

- `jsonl`: a set's items as JSON Lines, read (every line checked before anything is stored) and written.
- `items`: which item a reviewed answer makes (the latest review decides), pure.
- `measure`: one result's `data`, read from the stored trail and support record, pure.
- `metrics`: a run's metrics over its results' data, pure.
- `comparison`: regressions and improvements between two runs, and the `--fail-under` gates, pure.
- `agreement`: the support check against reviewers' flags (agreement, Cohen's kappa), pure.
- `selectors`, `services`: the reads and writes behind the commands and admin.
- `runner`: a run: every item asked through answers.pipeline.flow.ask(), as a reader's question is.
"""
