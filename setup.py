"""The optional C accelerator of the lean path (``minerva._lean``); everything else is in
setup.cfg. Where it does not compile, minerva runs its pure-Python path."""
import glob

from setuptools import Extension, setup

# minerva/_lean.c includes its parts (minerva/_lean_parts/*.c) into one translation unit
PARTS = sorted(glob.glob("minerva/_lean_parts/*.c"))

setup(ext_modules=[Extension("minerva._lean", ["minerva/_lean.c"], depends=PARTS,
                             optional=True)])
