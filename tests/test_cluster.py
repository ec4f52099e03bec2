from pathlib import Path

import pytest

from ddlsched.cluster import PRESETS, load_cluster
from ddlsched.cluster.topology import GBIT, LinkKind
from ddlsched.errors import ConfigError


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_builds(name):
    c = load_cluster(name)
    assert c.num_gpus > 0
    assert sum(len(g) for g in c.server_gpus) == c.num_gpus


def test_rack256_shape_and_uplinks():
    c = load_cluster("rack256")
    assert (c.num_racks, c.num_servers, c.num_gpus) == (4, 32, 256)
    ups = [link for link in c.links if link.kind == LinkKind.RACK_UP]
    assert len(ups) == 4
    assert ups[0].capacity_Bps == pytest.approx(8 * 25 * GBIT / 4)


def test_paths_by_locality():
    c = load_cluster("rack256")
    assert c.path(0, 1) == (c.gpu_tx_link(0),)
    assert c.path(0, 8) == (c.nic_tx_link(0), c.nic_rx_link(1))
    assert c.path(0, 64) == (c.nic_tx_link(0), c.rack_up_link(0), c.rack_down_link(1), c.nic_rx_link(8))


def test_ring_visits_each_server_once():
    c = load_cluster("wang2020")
    hops = c.ring_hops([8, 0, 1, 9])  # two servers, two GPUs each
    nic_hops = [h for h in hops if len(h) == 2]
    assert len(hops) == 4 and len(nic_hops) == 2


def test_yu2022_is_seeded():
    a, b, c = load_cluster("yu2022", seed=1), load_cluster("yu2022", seed=1), load_cluster("yu2022", seed=2)
    assert [len(s) for s in a.server_gpus] == [len(s) for s in b.server_gpus]
    assert {len(s) for s in a.server_gpus} <= {4, 8, 16, 32}
    assert [len(s) for s in a.server_gpus] != [len(s) for s in c.server_gpus]


def test_cluster_file_roundtrip(tmp_path: Path):
    p = tmp_path / "c.yaml"
    p.write_text(
        "name: t\nnetwork: {nic_gbps: 10, oversubscription: 2}\n"
        "gpu_types: {V100: {mem_gb: 32}}\n"
        "racks:\n  - count: 2\n    servers: [{count: 3, gpus: 4, gpu_type: V100}]\n"
    )
    c = load_cluster(p)
    assert (c.num_racks, c.num_servers, c.num_gpus) == (2, 6, 24)


def test_cluster_file_rejects_unknown_key(tmp_path: Path):
    p = tmp_path / "c.yaml"
    p.write_text("gpu_types: {V100: {mem_gb: 32}}\nracks: [{servers: [{gpus: 4, gpu_type: V100}]}]\nbogus: 1\n")
    with pytest.raises(ConfigError, match=r"c\.yaml.*bogus.*unknown key"):
        load_cluster(p)


def test_cluster_file_unknown_gpu_type(tmp_path: Path):
    p = tmp_path / "c.toml"
    p.write_text('[gpu_types.V100]\nmem_gb = 32\n[[racks]]\nservers = [{gpus = 4, gpu_type = "H100"}]\n')
    with pytest.raises(ConfigError, match="H100"):
        load_cluster(p)


def test_unknown_preset():
    with pytest.raises(ConfigError, match="unknown cluster"):
        load_cluster("nope")
