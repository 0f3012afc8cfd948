from skill_assets.lib.common import cpu


def test_flags_and_model_come_from_the_cpuinfo_lines(monkeypatch):
    lines = ("processor\t: 0", "model name\t: AMD EPYC 9B14", "flags\t\t: fpu avx2 avx512_bf16",
             "processor\t: 1", "model name\t: AMD EPYC 9B14", "Features\t: fp asimd")
    monkeypatch.setattr(cpu, "cpuinfo", lambda: lines)
    assert cpu.cpu_model() == "AMD EPYC 9B14"
    assert cpu.cpu_flags() == {"fpu", "avx2", "avx512_bf16", "fp", "asimd"}


def test_without_cpuinfo_the_platform_names_the_cpu(monkeypatch):
    monkeypatch.setattr(cpu, "cpuinfo", lambda: ())
    assert cpu.cpu_model() and cpu.cpu_flags() == set()

