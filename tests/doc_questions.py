"""Questions written from reading the shared documentation corpora, with the file that
answers each (relative to the corpus folder). Used by the tests and bench/docs_qa.py."""

NEUROML_QUESTIONS = [
    ("How do I validate a NeuroML file from the command line?", "Userdocs/ValidatingNeuroMLModels.md"),
    ("How do I install jNeuroML using the pre-compiled JAR?", "Userdocs/Software/jNeuroML.md"),
    ("How do I set the NEURON_HOME environment variable?", "Userdocs/Software/Tools/NEURON.md"),
    ("How can I add provenance annotations to a NeuroML model?", "Userdocs/Provenance.md"),
    ("How are units and dimensions handled in NeuroML?", "Userdocs/UnitsAndDimensions.md"),
    ("How can I visualise the morphology of a multi-compartmental cell?", "Userdocs/VisualisingCells.md"),
    ("Who funds the NeuroML initiative?", "NeuroMLOrg/Funding.md"),
    ("How do I store NeuroML models in HDF5 format?", "Userdocs/HDF5.md"),
    ("How do I install pyNeuroML with pip?", "Userdocs/Software/pyNeuroML.md"),
    ("Can NeuroML models be simulated with the NEST simulator?", "Userdocs/Software/Tools/NEST.md"),
    ("What is the Izhikevich network example about?", "Userdocs/IzhikevichNetworkExample.md"),
    ("What does the NeuroML Scientific Committee do?", "NeuroMLOrg/ScientificCommittee.md"),
    ("How are paths to quantities inside a NeuroML model written?", "Userdocs/Paths.md"),
]

XARRAY_QUESTIONS = [
    ("How do I select data by coordinate label with sel?", "user-guide/indexing.md"),
    ("How do I resample a time series to monthly means?", "user-guide/time-series.md"),
    ("How do I open many netCDF files as a single dataset?", "user-guide/io.md"),
    ("How do I convert a Dataset to a pandas DataFrame?", "user-guide/pandas.md"),
    ("How do I install xarray with conda?", "getting-started-guide/installing.rst"),
    ("How do I interpolate data onto new coordinates?", "user-guide/interpolation.md"),
    ("How do I group data into bins with groupby_bins?", "user-guide/groupby.md"),
    ("How do I use dask to process arrays in parallel?", "user-guide/dask.md"),
    ("How do I concatenate datasets along a new dimension?", "user-guide/combining.md"),
    ("How do I make a line plot of a DataArray?", "user-guide/plotting.md"),
    ("What is the difference between a DataArray and a Dataset?", "user-guide/data-structures.md"),
    ("How do I add a new backend to read a custom file format?", "internals/how-to-add-new-backend.md"),
    ("How can I set global options such as keep_attrs?", "user-guide/options.rst"),
    ("How do I organise datasets in a tree with DataTree?", "user-guide/hierarchical-data.md"),
]

# Questions no configured documentation domain should answer.
OFF_TOPIC_QUESTIONS = [
    "What is the recipe for banana pancakes?",
    "Who won the football world cup in 2014?",
    "How do I change a flat tyre on a bicycle?",
    "What is the capital of Australia?",
]
