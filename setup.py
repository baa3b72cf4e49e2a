"""react_ros: an ament_python package and a pip-installable tool at the same time."""
from glob import glob

from setuptools import find_packages, setup

package_name = 'react_ros'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(include=['react_ros', 'react_ros.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.py')),
        # RViz (and Foxglove) configs, kept in each kind's folder, installed side by side
        ('share/' + package_name + '/config', glob('react_ros/kinds/*/*.rviz')
         + glob('react_ros/kinds/*/*.foxglove.json')),
    ],
    package_data={'react_ros': ['kinds/*/*.yaml', 'kinds/*/*.rviz', 'kinds/*/*.urdf',
                                'kinds/*/*.foxglove.json', 'kinds/*/PITFALLS.md', 'ros/*.xml',
                                'kit/template/*.yaml', 'kit/template/*.rviz',
                                'kit/template/*.md', 'info.schema.json']},
    install_requires=['setuptools'],
    # requirements/ray.txt, requirements/foxglove.txt: the same pins for the .venv set-up
    extras_require={'ray': ['ray>=2.9'], 'foxglove': ['foxglove-sdk>=0.30,<0.31']},
    zip_safe=True,
    maintainer='react_ros',
    maintainer_email='react_ros@example.com',
    description='Republish robotics dataset episodes as ROS 2 topics, or convert them to rosbag2 MCAP.',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'react-ros = react_ros.cli:main',
            'player = react_ros.node:main',
            'state_publisher = react_ros.ros.state_publisher:main',
        ],
    },
)
