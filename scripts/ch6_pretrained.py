"""Chapter 6: importance, ablation and pruning of the pretrained model.

Regenerates scripts/results/ch6_pretrained.json. The study itself is
mha_lib.experiments.studies.ch6_pretrained: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch6_pretrained import main

if __name__ == "__main__":
    main()
