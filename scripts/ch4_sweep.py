"""Chapter 4: the number of heads at a fixed d_model, several seeds.

Regenerates scripts/results/ch4_sweep.json. The study itself is
mha_lib.experiments.studies.ch4_sweep: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch4_sweep import main

if __name__ == "__main__":
    main()
