"""Chapter 4: a match planted in a few of 512 features, one wide head or many.

Regenerates scripts/results/ch4_planted.json. The study itself is
mha_lib.experiments.studies.ch4_planted: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch4_planted import main

if __name__ == "__main__":
    main()
