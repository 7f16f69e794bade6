"""Chapter 3: does removing one head change what the others learn?

Regenerates scripts/results/ch3_coupling.json. The study itself is
mha_lib.experiments.studies.ch3_coupling: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch3_coupling import main

if __name__ == "__main__":
    main()
