"""Chapter 6: which heads of the toy model matter, over several seeds.

Regenerates scripts/results/ch6_toy.json. The study itself is
mha_lib.experiments.studies.ch6_toy: its docstring says what it runs and how long it takes;
--help lists the options.
"""

from mha_lib.experiments.studies.ch6_toy import main

if __name__ == "__main__":
    main()
