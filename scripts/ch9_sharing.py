"""Chapter 9: shared key/value heads on the toy tasks, several seeds.

Regenerates scripts/results/ch9_sharing.json. The study itself is
mha_lib.experiments.studies.ch9_sharing: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch9_sharing import main

if __name__ == "__main__":
    main()
