# Cross-build for the paper's client ISA (32-bit ARMv7, Cortex-A7) with Debian's
# arm-linux-gnueabihf toolchain; configure-time test programs run under qemu-arm.
# Licensed under the Apache License, Version 2.0.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(VEIL_ARMV7_FLAGS "-march=armv7-a -mtune=cortex-a7 -mfpu=neon-vfpv4 -mfloat-abi=hard -marm")
set(CMAKE_C_FLAGS_INIT "${VEIL_ARMV7_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${VEIL_ARMV7_FLAGS}")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm -L /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
