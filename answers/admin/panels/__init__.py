"""The answer page's panels, one module each, read from the stored record: `Answer.markers` and
the AnswerSource rows.

Nothing here decides anything about a marker: every outcome, span and final
number comes from the record the pipeline stored (docs of the record:
answers.citations.trail.compute_trail). These modules only lay it out for the
templates in templates/admin/answers/answer/trail/.

- `trail`: the raw and final text, every marker's decision (`trail_panels`).
- `sources`: the retrieved sources and their outcomes (`source_rows`).
- `support`: the support record, sentence by sentence (`support_panel`).
- `native`: the provider's own citations, their spans marked in the raw text (`native_panel`).
- `dense`: hybrid retrieval's ranks (`dense_panel`); `coverage`: the question's terms (`coverage_panel`).
- `summary`: the answer as its reader got it, for the conversation page and the review form
  (`answer_summary`).
"""
