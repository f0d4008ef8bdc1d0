"""amp: placeholder"""
