"""Head analysis: what a trained model's heads do and which of them a task needs, one module per method.

- `token_scores`: per-token scores (previous, next, same token, [CLS], [SEP], entropy), as Clark et al. (2019)
  measure BERT's heads; lesson 15.
- `syntax`: syntax and co-reference heads, also Clark et al. (2019), with the CoNLL-U reader; lesson 15.
- `selection`: choosing the best syntax head on held-out sentences, with Wilson and bootstrap intervals; lesson 15.
- `vector_norms`: value-norm weighting and attention sinks, as Kobayashi et al. (2020); lesson 15.
- `pruning`: pruning heads on a paraphrase-retrieval task, as Michel et al. (2019); lessons 16 and 17.

Every public name is also importable from this package (`head_analysis.relation_table`), and DATA is the folder of
the shipped data files. Splitting a layer into
heads and merging them back is not here: that is `mha_lesson.heads`.
"""

from . import pruning, selection, syntax, token_scores, vector_norms
from ._common import DATA
from .pruning import (
    MODES,
    Paraphrase,
    ablate_heads,
    ablated_model,
    head_importance,
    head_outputs,
    load_paraphrases,
    prune_curve,
    prune_order,
    pruning_reference,
    pruning_results,
    retrieval_accuracy,
    retrieval_margin,
)
from .selection import arc_hits, held_out_selection, wilson_interval
from .syntax import (
    DIRECTIONS,
    OFFSETS,
    RELATION_LABELS,
    RELATIONS,
    Annotated,
    antecedent_baselines,
    best_heads,
    load_relations,
    most_attended,
    offset_baseline,
    relation_accuracy,
    relation_grid,
    relation_table,
    word_attention,
    word_groups,
    word_maps,
)
from .token_scores import (
    LABELS,
    SCORES,
    compare_with_clark,
    corpus_scores,
    entropy,
    first_token,
    heads_above,
    last_token,
    next_token,
    previous_token,
    same_token,
    uniform_baseline,
)
from .vector_norms import norm_weighted, sink_scores, value_norms

__all__ = [
    "DATA",
    "Annotated",
    "DIRECTIONS",
    "LABELS",
    "MODES",
    "OFFSETS",
    "Paraphrase",
    "RELATIONS",
    "RELATION_LABELS",
    "SCORES",
    "ablate_heads",
    "ablated_model",
    "antecedent_baselines",
    "arc_hits",
    "best_heads",
    "compare_with_clark",
    "corpus_scores",
    "entropy",
    "first_token",
    "head_importance",
    "head_outputs",
    "heads_above",
    "held_out_selection",
    "last_token",
    "load_paraphrases",
    "load_relations",
    "most_attended",
    "next_token",
    "norm_weighted",
    "offset_baseline",
    "previous_token",
    "prune_curve",
    "prune_order",
    "pruning",
    "pruning_reference",
    "pruning_results",
    "relation_accuracy",
    "relation_grid",
    "relation_table",
    "retrieval_accuracy",
    "retrieval_margin",
    "same_token",
    "selection",
    "sink_scores",
    "syntax",
    "token_scores",
    "uniform_baseline",
    "value_norms",
    "vector_norms",
    "wilson_interval",
    "word_attention",
    "word_groups",
    "word_maps",
]
