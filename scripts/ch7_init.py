"""Chapter 7: which too-large initial weights hurt a head, and why.

Regenerates scripts/results/ch7_init.json. The study itself is
mha_lib.experiments.studies.ch7_init: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch7_init import main

if __name__ == "__main__":
    main()
