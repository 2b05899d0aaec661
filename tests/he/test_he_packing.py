import pytest

from veil.he.layers import network
from veil.he.packing import network_plans
from veil.he.params import HEParams
from veil.he.server import count_plan

P = HEParams(8192, (52, 52, 52), 29)


@pytest.mark.parametrize("name", ["lenet5_small", "lenet5_large", "squeezenet", "vgg16"])
def test_closed_form_rotations_match_counted(name):
    # The closed form used to pick the baby-step count agrees with the evaluation code's count.
    for plan in network_plans(network(name), P, "rr"):
        if plan.depthwise:
            continue
        c = count_plan(plan)
        assert c.rotations + c.column_rotations == plan.rr_rotations(), plan.layer.name
        assert c.mask_mults == 0


@pytest.mark.parametrize("name", ["lenet5_small", "vgg16"])
def test_layouts_fit_rows(name):
    for mode in ("rr", "mask"):
        for plan in network_plans(network(name), P, mode):
            assert plan.nframes * plan.F <= plan.R
            if mode == "rr" and not plan.depthwise:
                # Every read of the redundant window stays inside the frames the client laid out.
                last_diag = min(plan.G * plan.B, plan.nin) - 1
                assert (plan.n - 1) + last_diag <= plan.nframes - 1
                assert plan.merge * plan.n * plan.F <= plan.R
