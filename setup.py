"""The optional C accelerator of the lean path (``minerva._lean``); everything else is in
setup.cfg. Where it does not compile, minerva runs its pure-Python path."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("minerva._lean", ["minerva/_lean.c"], optional=True)])
