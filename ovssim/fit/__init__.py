"""Fitting: measured data (``data/``) -> calibration profiles (``calibration/``).

* :mod:`.samples` -- read and check delay samples (CSV/Parquet/plain, collector campaign dirs);
* :mod:`.ecdf` -- seed 001's eq. 1 frequency table and the ECDF;
* :mod:`.families` -- empirical, shifted exponential, gamma, Weibull, log-normal and
  :mod:`.mixture` (EM log-normal mixture, k by BIC); AIC/BIC choice, KS and AD figures;
* :mod:`.regression` -- OLS and quantile regression of log(delay) on its drivers;
* :mod:`.calibrate` -- simulation-based calibration against aggregate metrics, with
  common random numbers and Jacobian or bootstrap uncertainty;
* :mod:`.export` -- ns-3 ``EmpiricalRandomVariable`` tables, OMNeT++ expressions, JSON;
* :mod:`.plots` -- ECDF with fitted CDFs overlaid, Q-Q plot;
* :mod:`.profile_writer` -- profile TOML with provenance;
* :mod:`.cli` -- ``ovssim fit samples | regress | runs | export``.

Examples::

    ovssim fit samples data/local/local-bridges --where series=rtt --by bridge --plots figs
    ovssim fit samples lookup_us.csv --param ovs.lookup --name xen-lookup
    ovssim fit regress delays.csv --delay delay_us --drivers packet_size,rate --log-drivers rate \\
        --predict packet_size=1500b,rate=200mbit
    ovssim fit runs data/seeds/seed000_thesis_tables.csv --scenario validation/scenarios/thesis_kvm_ovs.toml \\
        --where testbed=thesis_kvm --where bridge=ovs --where scheduler=FIFO --where "table=Table 6" \\
        -p vif.kvm-tap.backend_delay:scale=2us..80us -t rtt=rr:rtt_mean
    ovssim fit export calibration/xen-lookup.toml --format ns3-cpp
"""
