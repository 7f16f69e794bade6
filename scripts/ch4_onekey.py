"""Chapter 4: why one head ends below several on one-key recall.

Regenerates scripts/results/ch4_onekey.json. The study itself is
mha_lib.experiments.studies.ch4_onekey: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch4_onekey import main

if __name__ == "__main__":
    main()
