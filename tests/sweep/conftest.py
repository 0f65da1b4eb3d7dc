import pytest

from sweep_helpers import GRID, SCENARIO, write_sweep


@pytest.fixture
def scenario_file(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(SCENARIO)
    return p


@pytest.fixture
def grid_sweep(tmp_path):
    return write_sweep(tmp_path, GRID)
