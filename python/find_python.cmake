# Whether to build the Python package's extension module (python/, docs/python.md), and
# what it needs: Python's headers and nanobind (a pinned PyPI package: .venv's, or the
# one scikit-build-core's `pip install .` provides). Included before the stage libraries,
# which are then built position-independent so that the module links the very same ones.
# OLLIE_PYTHON: AUTO (build it when both are found), ON (required) or OFF.
set(OLLIE_PYTHON AUTO CACHE STRING "Build the Python extension module: AUTO, ON or OFF")
set(OLLIE_PYTHON_ENABLED OFF)
if(NOT OLLIE_PYTHON STREQUAL "OFF")
  if(NOT DEFINED Python_EXECUTABLE AND EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
    set(Python_EXECUTABLE ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  endif()
  find_package(Python 3.11 COMPONENTS Interpreter Development.Module)
  set(why "")
  if(NOT Python_FOUND)
    set(why "no Python >= 3.11 with its headers (Debian: python3-dev)")
  else()
    execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir
                    OUTPUT_VARIABLE nanobind_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE nanobind_missing ERROR_QUIET)
    if(nanobind_missing)
      set(why "no nanobind for ${Python_EXECUTABLE} (scripts/setup.sh installs it into .venv)")
    else()
      list(APPEND CMAKE_PREFIX_PATH ${nanobind_dir})
      find_package(nanobind CONFIG)
      if(NOT nanobind_FOUND)
        set(why "nanobind's CMake files at ${nanobind_dir} did not load")
      endif()
    endif()
  endif()
  if(why STREQUAL "")
    set(OLLIE_PYTHON_ENABLED ON)
    set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  elseif(OLLIE_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "OLLIE_PYTHON=ON but ${why}")
  else()
    message(STATUS "not building the Python module (OLLIE_PYTHON=AUTO): ${why}")
  endif()
endif()
